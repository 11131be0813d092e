"""Word and name lists behind the perturbation suites (written for this project).

Changing any list changes the suites' output, so bump ``LISTS_VERSION`` with it:
it is part of every derived dataset's recorded version.
"""

from __future__ import annotations

LISTS_VERSION = "1"

# QWERTY neighbours (lower case) for keyboard typos.
KEYBOARD_NEIGHBOURS = {
    "q": "wa", "w": "qeas", "e": "wrsd", "r": "etdf", "t": "ryfg", "y": "tugh", "u": "yihj", "i": "uojk",
    "o": "ipkl", "p": "ol", "a": "qwsz", "s": "awedxz", "d": "serfcx", "f": "drtgvc", "g": "ftyhbv",
    "h": "gyujnb", "j": "huikmn", "k": "jiolm", "l": "kop", "z": "asx", "x": "zsdc", "c": "xdfv",
    "v": "cfgb", "b": "vghn", "n": "bhjm", "m": "njk",
}

# Common misspellings (correct -> misspelled); lower case.
MISSPELLINGS = {
    "about": "abuot", "absolutely": "absolutly", "accept": "acept", "actually": "actualy",
    "address": "adress", "again": "agian", "almost": "allmost", "already": "allready", "always": "allways",
    "amazing": "amazeing", "another": "anotehr", "answer": "anwser", "apparently": "apparantly",
    "argument": "arguement", "atmosphere": "atmosphare", "awful": "awfull", "because": "becuase",
    "before": "befor", "beginning": "begining", "believe": "beleive", "between": "betwen",
    "business": "buisness", "calendar": "calender", "character": "charachter", "coming": "comming",
    "completely": "completly", "could": "coud", "definitely": "definately", "different": "diffrent",
    "disappoint": "dissapoint", "disappointed": "dissapointed", "disappointing": "dissapointing",
    "embarrass": "embarass", "enough": "enuff", "environment": "enviroment", "especially": "especialy",
    "every": "evry", "excellent": "excelent", "experience": "experiance", "finally": "finaly",
    "friend": "freind", "friends": "freinds", "government": "goverment", "great": "graet",
    "happened": "happend", "horrible": "horible", "immediately": "immediatly", "interesting": "intresting",
    "know": "kno", "later": "latter", "least": "lest", "little": "litle", "literally": "literaly",
    "movie": "moive", "necessary": "neccessary", "never": "nevr", "noticeable": "noticable",
    "occasion": "occassion", "occurred": "occured", "people": "poeple", "perform": "preform",
    "probably": "probly", "really": "realy", "receive": "recieve", "recommend": "reccomend",
    "separate": "seperate", "should": "shoud", "something": "somthing", "surprise": "suprise",
    "terrible": "terible", "their": "thier", "there": "ther", "though": "tho", "through": "throught",
    "tomorrow": "tommorow", "truly": "truely", "until": "untill", "weird": "wierd", "which": "wich",
    "while": "whiel", "with": "wiht", "without": "withuot", "would": "woud", "writing": "writting",
}

# Expanded form -> contraction (lower case); the inverse expands.
CONTRACTIONS = {
    "are not": "aren't", "cannot": "can't", "could not": "couldn't", "did not": "didn't",
    "does not": "doesn't", "do not": "don't", "had not": "hadn't", "has not": "hasn't",
    "have not": "haven't", "he is": "he's", "he will": "he'll", "i am": "i'm", "i have": "i've",
    "i will": "i'll", "i would": "i'd", "is not": "isn't", "it is": "it's", "let us": "let's",
    "she is": "she's", "she will": "she'll", "should not": "shouldn't", "that is": "that's",
    "there is": "there's", "they are": "they're", "they have": "they've", "they will": "they'll",
    "was not": "wasn't", "we are": "we're", "we have": "we've", "we will": "we'll", "were not": "weren't",
    "what is": "what's", "who is": "who's", "will not": "won't", "would not": "wouldn't",
    "you are": "you're", "you have": "you've", "you will": "you'll",
}

# Latin letter -> look-alike (Cyrillic / Greek) character.
HOMOGLYPHS = {
    "a": "\u0430", "c": "\u0441", "e": "\u0435", "i": "\u0456", "j": "\u0458", "o": "\u043e",
    "p": "\u0440", "s": "\u0455", "x": "\u0445", "y": "\u0443", "A": "\u0410", "B": "\u0412",
    "C": "\u0421", "E": "\u0415", "H": "\u041d", "I": "\u0406", "K": "\u041a", "M": "\u041c",
    "N": "\u039d", "O": "\u041e", "P": "\u0420", "T": "\u0422", "X": "\u0425", "Y": "\u03a5",
}

# (male, female) word pairs, lower case; both directions are swapped.
GENDER_PAIRS = [
    ("he", "she"), ("him", "her"), ("his", "her"), ("himself", "herself"), ("man", "woman"), ("men", "women"),
    ("boy", "girl"), ("boys", "girls"), ("father", "mother"), ("fathers", "mothers"), ("son", "daughter"),
    ("sons", "daughters"), ("brother", "sister"), ("brothers", "sisters"), ("husband", "wife"),
    ("husbands", "wives"), ("uncle", "aunt"), ("uncles", "aunts"), ("nephew", "niece"), ("king", "queen"),
    ("kings", "queens"), ("prince", "princess"), ("gentleman", "lady"), ("gentlemen", "ladies"),
    ("sir", "madam"), ("mr", "mrs"), ("male", "female"), ("males", "females"), ("boyfriend", "girlfriend"),
    ("grandfather", "grandmother"), ("grandson", "granddaughter"), ("dad", "mom"), ("dads", "moms"),
    ("actor", "actress"), ("actors", "actresses"), ("waiter", "waitress"), ("guy", "gal"),
    ("fiance", "fiancee"), ("groom", "bride"), ("stepfather", "stepmother"), ("manhood", "womanhood"),
]

# First names by group and gender (12 each, so swaps can keep the position in the list).
FIRST_NAMES = {
    "anglo": {
        "male": ["James", "John", "Robert", "Michael", "David", "William", "Thomas", "Matthew", "Andrew",
                 "Peter", "George", "Edward"],
        "female": ["Mary", "Elizabeth", "Sarah", "Emily", "Jennifer", "Jessica", "Katherine", "Anne", "Laura",
                   "Rachel", "Emma", "Megan"],
    },
    "african_american": {
        "male": ["Jamal", "DeShawn", "Tyrone", "Darnell", "Malik", "Terrell", "Jermaine", "Lamar", "Rashad",
                 "Darius", "Andre", "Marquis"],
        "female": ["Aaliyah", "Latoya", "Keisha", "Tanisha", "Ebony", "Imani", "Shanice", "Latisha", "Tamika",
                   "Jasmine", "Nia", "Kiara"],
    },
    "hispanic": {
        "male": ["Jose", "Luis", "Carlos", "Juan", "Miguel", "Alejandro", "Diego", "Javier", "Santiago",
                 "Mateo", "Pablo", "Ricardo"],
        "female": ["Maria", "Carmen", "Lucia", "Sofia", "Isabella", "Valentina", "Gabriela", "Camila",
                   "Ximena", "Daniela", "Paula", "Elena"],
    },
    "east_asian": {
        "male": ["Wei", "Hiroshi", "Jin", "Takumi", "Minjun", "Haruto", "Ryota", "Kenji", "Chen", "Seojun",
                 "Yuto", "Hao"],
        "female": ["Mei", "Yuki", "Hana", "Jiwoo", "Xiu", "Sakura", "Yuna", "Aiko", "Seoyeon", "Ying",
                   "Haruka", "Xinyi"],
    },
    "south_asian": {
        "male": ["Arjun", "Rahul", "Vikram", "Rohan", "Amit", "Sanjay", "Ravi", "Aditya", "Karan", "Vivek",
                 "Anil", "Suresh"],
        "female": ["Priya", "Ananya", "Divya", "Kavya", "Neha", "Pooja", "Aishwarya", "Sunita", "Lakshmi",
                   "Meera", "Anjali", "Shreya"],
    },
    "arab": {
        "male": ["Mohammed", "Ahmed", "Omar", "Ali", "Hassan", "Youssef", "Khalid", "Tariq", "Karim", "Samir",
                 "Ibrahim", "Mustafa"],
        "female": ["Fatima", "Aisha", "Layla", "Noor", "Zainab", "Mariam", "Yasmin", "Huda", "Amira", "Salma",
                   "Rania", "Leila"],
    },
}


def name_index() -> dict[str, tuple[str, str, int]]:
    """Name -> (group, gender, position) for every listed first name."""
    return {name: (group, gender, i)
            for group, by_gender in FIRST_NAMES.items()
            for gender, names in by_gender.items()
            for i, name in enumerate(names)}
