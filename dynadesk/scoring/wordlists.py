"""Word and name lists behind the perturbation suites (written for this project).

Changing any list changes the suites' output, so bump ``LISTS_VERSION`` with it:
it is part of every derived dataset's recorded version.
"""

from __future__ import annotations

LISTS_VERSION = "2"

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
    "know": "kno", "little": "litle", "literally": "literaly",
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
    "i will": "i'll", "i would": "i'd", "is not": "isn't", "it is": "it's",
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

# (male, female) gendered nouns, adjectives and titles, lower case; both directions are
# swapped. The families follow AugLy's gendered-word list (the one Dynaboard used):
# kinship, roles and occupations, nobility, religion, titles; pronouns are handled by
# part of speech in ``dynadesk.scoring.gender`` and are not listed here.
GENDER_PAIRS = [
    ("man", "woman"), ("men", "women"), ("man's", "woman's"), ("men's", "women's"), ("boy", "girl"),
    ("boys", "girls"), ("boy's", "girl's"), ("guy", "gal"), ("guys", "gals"), ("lad", "lass"),
    ("gentleman", "lady"), ("gentlemen", "ladies"), ("male", "female"), ("males", "females"),
    ("masculine", "feminine"), ("masculinity", "femininity"), ("manhood", "womanhood"), ("manly", "womanly"),
    ("boyhood", "girlhood"), ("boyish", "girlish"), ("father", "mother"), ("fathers", "mothers"),
    ("fatherhood", "motherhood"), ("fatherly", "motherly"), ("paternal", "maternal"), ("paternity", "maternity"),
    ("dad", "mom"), ("dads", "moms"), ("daddy", "mommy"), ("daddies", "mommies"), ("grandpa", "grandma"),
    ("grandpas", "grandmas"), ("grandfather", "grandmother"), ("grandfathers", "grandmothers"),
    ("son", "daughter"), ("sons", "daughters"), ("grandson", "granddaughter"), ("grandsons", "granddaughters"),
    ("stepson", "stepdaughter"), ("stepfather", "stepmother"), ("godfather", "godmother"),
    ("brother", "sister"), ("brothers", "sisters"), ("brotherhood", "sisterhood"), ("brotherly", "sisterly"),
    ("bro", "sis"), ("uncle", "aunt"), ("uncles", "aunts"), ("nephew", "niece"), ("nephews", "nieces"),
    ("husband", "wife"), ("husbands", "wives"), ("boyfriend", "girlfriend"), ("boyfriends", "girlfriends"),
    ("groom", "bride"), ("grooms", "brides"), ("fiance", "fiancee"), ("widower", "widow"),
    ("widowers", "widows"), ("bachelor", "bachelorette"), ("househusband", "housewife"),
    ("king", "queen"), ("kings", "queens"), ("prince", "princess"), ("princes", "princesses"),
    ("duke", "duchess"), ("dukes", "duchesses"), ("emperor", "empress"), ("baron", "baroness"),
    ("lord", "lady"), ("monk", "nun"), ("monks", "nuns"), ("priest", "priestess"), ("priests", "priestesses"),
    ("actor", "actress"), ("actors", "actresses"), ("waiter", "waitress"), ("waiters", "waitresses"),
    ("steward", "stewardess"), ("host", "hostess"), ("hero", "heroine"), ("heroes", "heroines"),
    ("chairman", "chairwoman"), ("chairmen", "chairwomen"), ("congressman", "congresswoman"),
    ("congressmen", "congresswomen"), ("spokesman", "spokeswoman"), ("spokesmen", "spokeswomen"),
    ("businessman", "businesswoman"), ("businessmen", "businesswomen"), ("salesman", "saleswoman"),
    ("policeman", "policewoman"), ("landlord", "landlady"), ("schoolboy", "schoolgirl"),
    ("cowboy", "cowgirl"), ("cowboys", "cowgirls"), ("wizard", "witch"), ("sorcerer", "sorceress"),
    ("fraternity", "sorority"), ("mister", "missus"), ("sir", "madam"),
]

# Gendered titles (capitalised, without a name after them): "Mr." <-> "Ms." as AugLy maps them.
TITLES = {"mr": "ms", "ms": "mr", "mrs": "mr"}
# Titles that, before a capitalised word, name a particular person (see dynadesk.scoring.gender).
PERSON_TITLES = {"mr", "mrs", "ms", "miss", "dr", "prof", "sir", "dame", "lord", "lady", "president", "senator",
                 "governor", "director", "judge", "justice", "gen", "general", "col", "capt", "captain", "rev",
                 "father", "sister", "brother", "king", "queen", "prince", "princess", "st", "saint", "mayor",
                 "secretary", "chairman", "minister", "officer", "coach", "uncle", "aunt", "auntie", "madam"}

# First names by group and gender, chosen to be unambiguous as names (no "Will", "Mark",
# "Rose", "Grace", "Frank": words that are also common nouns, verbs or adjectives).
FIRST_NAMES = {
    "anglo": {
        "male": ["James", "John", "Robert", "Michael", "David", "William", "Thomas", "Matthew", "Andrew",
                 "Peter", "George", "Edward", "Richard", "Charles", "Joseph", "Daniel", "Paul", "Steven",
                 "Kevin", "Brian", "Jason", "Jeffrey", "Ryan", "Gary", "Timothy", "Larry", "Scott", "Eric",
                 "Stephen", "Gregory", "Benjamin", "Samuel", "Patrick", "Harry", "Henry", "Tom", "Jim", "Kenneth",
                 "Steve", "Dave", "Mike", "Joe", "Tony", "Chris", "Jake", "Adam", "Sam", "Ben", "Josh", "Tim"],
        "female": ["Mary", "Elizabeth", "Sarah", "Emily", "Jennifer", "Jessica", "Katherine", "Anne", "Laura",
                   "Rachel", "Emma", "Megan", "Linda", "Barbara", "Susan", "Margaret", "Lisa", "Nancy",
                   "Karen", "Betty", "Helen", "Sandra", "Donna", "Michelle", "Amanda", "Melissa", "Deborah",
                   "Stephanie", "Rebecca", "Sharon", "Cynthia", "Kathleen", "Amy", "Anna", "Julie", "Alice",
                   "Kate", "Jane", "Carol", "Liz", "Jenny", "Annie", "Lucy", "Ellen", "Claire", "Diane",
                   "Nicole", "Heather", "Ashley", "Britney"],
    },
    "african_american": {
        "male": ["Jamal", "DeShawn", "Tyrone", "Darnell", "Malik", "Terrell", "Jermaine", "Lamar", "Rashad",
                 "Darius", "Andre", "Marquis", "Tyrell", "Kareem", "Leroy", "Cedric", "Dwayne", "Reggie"],
        "female": ["Aaliyah", "Latoya", "Keisha", "Tanisha", "Ebony", "Imani", "Shanice", "Latisha", "Tamika",
                   "Jasmine", "Nia", "Kiara", "Lakisha", "Shaniqua", "Tyra", "Aisha", "Monique", "Shanelle"],
    },
    "hispanic": {
        "male": ["Jose", "Luis", "Carlos", "Juan", "Miguel", "Alejandro", "Diego", "Javier", "Santiago",
                 "Mateo", "Pablo", "Ricardo", "Jorge", "Fernando", "Manuel", "Rafael", "Eduardo", "Pedro"],
        "female": ["Maria", "Carmen", "Lucia", "Sofia", "Isabella", "Valentina", "Gabriela", "Camila",
                   "Ximena", "Daniela", "Paula", "Elena", "Rosa", "Guadalupe", "Juanita", "Marisol",
                   "Alejandra", "Beatriz"],
    },
    "east_asian": {
        "male": ["Wei", "Hiroshi", "Takumi", "Minjun", "Haruto", "Ryota", "Kenji", "Seojun", "Yuto", "Hao",
                 "Takeshi", "Jae", "Akira", "Daisuke", "Jian", "Hyun", "Kazuo", "Yong"],
        "female": ["Mei", "Yuki", "Hana", "Jiwoo", "Xiu", "Sakura", "Yuna", "Aiko", "Seoyeon", "Ying",
                   "Haruka", "Xinyi", "Keiko", "Akiko", "Mina", "Lian", "Yumi", "Naoko"],
    },
    "south_asian": {
        "male": ["Arjun", "Rahul", "Vikram", "Rohan", "Amit", "Sanjay", "Ravi", "Aditya", "Karan", "Vivek",
                 "Anil", "Suresh", "Rajesh", "Deepak", "Manoj", "Arun", "Nikhil", "Sunil"],
        "female": ["Priya", "Ananya", "Divya", "Kavya", "Neha", "Pooja", "Aishwarya", "Sunita", "Lakshmi",
                   "Meera", "Anjali", "Shreya", "Deepika", "Kavita", "Nisha", "Rekha", "Swati", "Asha"],
    },
    "arab": {
        "male": ["Mohammed", "Ahmed", "Omar", "Ali", "Hassan", "Youssef", "Khalid", "Tariq", "Karim", "Samir",
                 "Ibrahim", "Mustafa", "Hussein", "Mahmoud", "Rami", "Walid", "Faisal", "Nabil"],
        "female": ["Fatima", "Layla", "Noor", "Zainab", "Mariam", "Yasmin", "Huda", "Amira", "Salma",
                   "Rania", "Leila", "Samira", "Nadia", "Hiba", "Dalia", "Lina", "Reem", "Farah"],
    },
}

# Invisible characters for the zero-width suite.
ZERO_WIDTH = ("\u200b", "\u200c", "\u200d", "\u2060")


def name_index() -> dict[str, tuple[str, str, int]]:
    """Name -> (group, gender, position) for every listed first name."""
    return {name: (group, gender, i)
            for group, by_gender in FIRST_NAMES.items()
            for gender, names in by_gender.items()
            for i, name in enumerate(names)}
