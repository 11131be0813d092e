"""Word and name lists behind the perturbation suites (written for this project).

Changing any list changes the suites' output, so bump ``LISTS_VERSION`` with it:
it is part of every derived dataset's recorded version.
"""

from __future__ import annotations

LISTS_VERSION = "4"  # 4: -man/-woman compounds (MAN_COMPOUNDS), more -ess and in-law nouns paired
# (3: first-name lists grown (provenance below); NAME_FOLLOWERS)

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
    ("heir", "heiress"), ("heirs", "heiresses"), ("god", "goddess"), ("gods", "goddesses"), ("count", "countess"),
    ("abbot", "abbess"), ("headmaster", "headmistress"), ("tsar", "tsarina"), ("sultan", "sultana"),
    ("manservant", "maidservant"), ("groomsman", "bridesmaid"), ("groomsmen", "bridesmaids"),
    ("stepbrother", "stepsister"), ("stepbrothers", "stepsisters"), ("godson", "goddaughter"),
    ("grandnephew", "grandniece"), ("brother-in-law", "sister-in-law"), ("son-in-law", "daughter-in-law"),
    ("father-in-law", "mother-in-law"),
]
# -man compounds with a -woman form, singular and plural (issue 49: "strongman ... her" must flip together).
MAN_COMPOUNDS = ("strong", "sports", "fire", "post", "camera", "front", "horse", "fisher", "crafts", "states",
                 "weather", "door", "fore", "handy", "gun", "mad", "show", "anchor", "council", "alder",
                 "assembly", "country", "kins", "noble", "news", "police", "sales", "business", "chair", "spokes",
                 "congress", "middle", "repair", "garbage", "bats", "trades", "committee", "yachts", "marks",
                 "swords", "cave")
GENDER_PAIRS += [(f"{stem}{m}", f"{stem}{w}") for stem in dict.fromkeys(MAN_COMPOUNDS)
                 for m, w in (("man", "woman"), ("men", "women"))
                 if (f"{stem}{m}", f"{stem}{w}") not in GENDER_PAIRS]

# Gendered titles (capitalised, without a name after them): "Mr." <-> "Ms." as AugLy maps them.
TITLES = {"mr": "ms", "ms": "mr", "mrs": "mr"}
# Titles that, before a capitalised word, name a particular person (see dynadesk.scoring.gender).
PERSON_TITLES = {"mr", "mrs", "ms", "miss", "dr", "prof", "sir", "dame", "lord", "lady", "president", "senator",
                 "governor", "director", "judge", "justice", "gen", "general", "col", "capt", "captain", "rev",
                 "father", "sister", "brother", "king", "queen", "prince", "princess", "st", "saint", "mayor",
                 "secretary", "chairman", "minister", "officer", "coach", "uncle", "aunt", "auntie", "madam"}

# First names by group and gender, chosen to be unambiguous as names (no "Will", "Mark",
# "Rose", "Grace", "Frank", "Jesus", "Oscar", "Kenya", "Austin": words that are also common nouns,
# verbs, adjectives, places or awards; no name that is also a frequent surname, "Howard", "Lawrence",
# "Douglas", "Martin", "Ryan", "Scott"; no title, "Marquis"; no film title that reviews name alone,
# "Carrie", "Shane"; no name in two groups). Provenance (selected by hand for this project, offline,
# from these published lists; none is copied whole, and the groups are the lists' own labels):
# - anglo: the US Social Security Administration's most popular given names of the births of 1950-1999
#   (ssa.gov/oact/babynames, public domain), and the White-associated names of Greenwald, McGhee and
#   Schwartz (1998, the IAT names Caliskan et al. 2017 reuse) and of Bertrand and Mullainathan (2004);
# - african_american: the African-American-associated names of the same two studies, and the distinctively
#   Black names of Fryer and Levitt (2004, "The causes and consequences of distinctively black names");
# - hispanic: the most frequent given names of Spain's INE and Mexico's national registry tables;
# - east_asian: frequent given names of Chinese (pinyin), Japanese (Hepburn) and Korean (Revised
#   Romanization) birth-name rankings (e.g. the Meiji Yasuda and Statistics Korea yearly tables);
# - south_asian: frequent Indian given names in national name-frequency tables;
# - arab: frequent given names in Arab countries' name-frequency tables.
# Growing a list changes which names are found and what they become: bump LISTS_VERSION.
FIRST_NAMES = {
    "anglo": {
        "male": ["James", "John", "Robert", "Michael", "David", "William", "Thomas", "Matthew", "Andrew",
                 "Peter", "George", "Edward", "Richard", "Charles", "Joseph", "Daniel", "Paul", "Steven",
                 "Kevin", "Brian", "Jason", "Jeffrey", "Gary", "Timothy", "Larry", "Eric",
                 "Stephen", "Gregory", "Benjamin", "Samuel", "Patrick", "Harry", "Henry", "Tom", "Jim", "Kenneth",
                 "Steve", "Dave", "Mike", "Joe", "Tony", "Chris", "Jake", "Adam", "Sam", "Ben", "Josh", "Tim",
                 "Christopher", "Anthony", "Donald", "Joshua", "Ronald", "Jonathan", "Nicholas", "Jacob", "Justin",
                 "Brandon", "Alexander", "Raymond", "Dennis", "Jerry", "Aaron", "Nathan", "Zachary", "Kyle",
                 "Ethan", "Jeremy", "Walter", "Keith", "Roger", "Sean", "Gerald", "Harold", "Arthur", "Jesse",
                 "Bryan", "Bruce", "Eugene", "Alan", "Vincent", "Ralph", "Philip", "Stuart", "Carl", "Todd",
                 "Doug", "Barry", "Ron", "Greg", "Brad", "Neil", "Brett", "Jeff", "Geoffrey", "Brendan",
                 "Alfred", "Travis", "Craig", "Derek", "Dustin", "Cody", "Trevor", "Jimmy", "Johnny",
                 "Danny", "Jack", "Leonard", "Stanley", "Malcolm", "Roland", "Mitch"],
        "female": ["Mary", "Elizabeth", "Sarah", "Emily", "Jennifer", "Jessica", "Katherine", "Anne", "Laura",
                   "Rachel", "Emma", "Megan", "Linda", "Barbara", "Susan", "Margaret", "Lisa", "Nancy",
                   "Karen", "Betty", "Helen", "Sandra", "Donna", "Michelle", "Amanda", "Melissa", "Deborah",
                   "Stephanie", "Rebecca", "Sharon", "Cynthia", "Kathleen", "Amy", "Anna", "Julie", "Alice",
                   "Kate", "Jane", "Carol", "Liz", "Jenny", "Annie", "Lucy", "Ellen", "Claire", "Diane",
                   "Nicole", "Heather", "Ashley", "Britney", "Patricia", "Kimberly", "Dorothy", "Angela",
                   "Shirley", "Brenda", "Pamela", "Samantha", "Christine", "Debra", "Catherine", "Janet",
                   "Carolyn", "Judith", "Andrea", "Hannah", "Cheryl", "Jacqueline", "Martha", "Teresa", "Gloria",
                   "Sara", "Janice", "Kathryn", "Abigail", "Sophia", "Julia", "Denise", "Danielle", "Marilyn",
                   "Natalie", "Theresa", "Diana", "Doris", "Kayla", "Lori", "Olivia", "Lauren", "Christina",
                   "Allison", "Jill", "Laurie", "Kristen", "Meredith", "Courtney", "Melanie",
                   "Katie", "Betsy", "Kristin", "Colleen", "Erin", "Molly", "Vanessa", "Erica", "Tina",
                   "Esther", "Pauline", "Harriet"],
    },
    "african_american": {
        "male": ["Jamal", "DeShawn", "Tyrone", "Darnell", "Malik", "Terrell", "Jermaine", "Lamar", "Rashad",
                 "Darius", "Andre", "Tyrell", "Kareem", "Leroy", "Cedric", "Dwayne", "Reggie",
                 "Alonzo", "Jamel", "Alphonse", "Torrance", "Lionel", "Tyree", "Deion", "Lamont", "Terrence",
                 "Marcellus", "Wardell", "Hakim", "Rasheed", "Tremayne", "DeAndre", "Jalen", "Trevon", "Jerome",
                 "Demetrius", "Cornelius", "Darryl", "Maurice", "Jamar", "Quincy", "Devonte"],
        "female": ["Aaliyah", "Latoya", "Keisha", "Tanisha", "Ebony", "Imani", "Shanice", "Latisha", "Tamika",
                   "Jasmine", "Nia", "Kiara", "Lakisha", "Shaniqua", "Tyra", "Aisha", "Monique", "Shanelle",
                   "Nichelle", "Shereen", "Temeka", "Tia", "Yolanda", "Malika", "Yvette", "Latonya", "Tameka",
                   "Lashonda", "Jada", "Kenisha", "Shanika", "Ayana", "Tanesha", "Lakeisha", "Shameka"],
    },
    "hispanic": {
        "male": ["Jose", "Luis", "Carlos", "Juan", "Miguel", "Alejandro", "Diego", "Javier", "Santiago",
                 "Mateo", "Pablo", "Ricardo", "Jorge", "Fernando", "Manuel", "Rafael", "Eduardo", "Pedro",
                 "Antonio", "Francisco", "Roberto", "Sergio", "Raul", "Ramon", "Enrique", "Arturo", "Alberto",
                 "Hector", "Ruben", "Andres", "Gerardo", "Ignacio", "Joaquin", "Emilio", "Gustavo", "Armando",
                 "Alfonso", "Rodrigo", "Felipe", "Octavio", "Ernesto", "Agustin", "Lorenzo"],
        "female": ["Maria", "Carmen", "Lucia", "Sofia", "Isabella", "Valentina", "Gabriela", "Camila",
                   "Ximena", "Daniela", "Paula", "Elena", "Rosa", "Guadalupe", "Juanita", "Marisol",
                   "Alejandra", "Beatriz", "Ana", "Veronica", "Adriana", "Claudia", "Mariana", "Fernanda",
                   "Monica", "Leticia", "Rocio", "Dolores", "Consuelo", "Pilar", "Graciela", "Silvia", "Marta",
                   "Cristina", "Lorena", "Natalia", "Paola", "Catalina", "Valeria", "Araceli", "Maribel",
                   "Yesenia"],
    },
    "east_asian": {
        "male": ["Wei", "Hiroshi", "Takumi", "Minjun", "Haruto", "Ryota", "Kenji", "Seojun", "Yuto", "Hao",
                 "Takeshi", "Jae", "Akira", "Daisuke", "Jian", "Hyun", "Kazuo", "Yong", "Ming", "Lei",
                 "Jie", "Feng", "Hiroto", "Sota", "Kenta", "Daiki", "Shota", "Yusuke", "Takashi", "Satoshi",
                 "Minho", "Jisung", "Junho", "Sungmin", "Jinwoo", "Haoran", "Zihao", "Yichen"],
        "female": ["Mei", "Yuki", "Hana", "Jiwoo", "Xiu", "Sakura", "Yuna", "Aiko", "Seoyeon", "Ying",
                   "Haruka", "Xinyi", "Keiko", "Akiko", "Mina", "Lian", "Yumi", "Naoko", "Jing", "Fang", "Hui",
                   "Misaki", "Yui", "Emi", "Nanami", "Ayaka", "Miyu", "Soyeon", "Jiyoung", "Minji", "Eunji",
                   "Hyejin", "Xiaomei", "Yuting", "Jiayi", "Xiaoling"],
    },
    "south_asian": {
        "male": ["Arjun", "Rahul", "Vikram", "Rohan", "Amit", "Sanjay", "Ravi", "Aditya", "Karan", "Vivek",
                 "Anil", "Suresh", "Rajesh", "Deepak", "Manoj", "Arun", "Nikhil", "Sunil", "Rajiv", "Ashok",
                 "Vijay", "Prakash", "Ramesh", "Mahesh", "Ajay", "Naveen", "Siddharth", "Abhishek", "Gaurav",
                 "Harish", "Pranav", "Vikas", "Kunal", "Rakesh", "Sandeep", "Varun"],
        "female": ["Priya", "Ananya", "Divya", "Kavya", "Neha", "Pooja", "Aishwarya", "Sunita", "Lakshmi",
                   "Meera", "Anjali", "Shreya", "Deepika", "Kavita", "Nisha", "Rekha", "Swati", "Asha", "Sneha",
                   "Priyanka", "Shweta", "Radhika", "Anita", "Pallavi", "Aarti", "Geeta", "Usha", "Ritu",
                   "Shilpa", "Poonam", "Madhuri", "Nandini", "Ishita", "Tanvi"],
    },
    "arab": {
        "male": ["Mohammed", "Ahmed", "Omar", "Ali", "Hassan", "Youssef", "Khalid", "Tariq", "Karim", "Samir",
                 "Ibrahim", "Mustafa", "Hussein", "Mahmoud", "Rami", "Walid", "Faisal", "Nabil", "Abdullah",
                 "Hamza", "Bilal", "Yusuf", "Ziad", "Majid", "Adel", "Bassam", "Fadi", "Hani", "Imad", "Marwan",
                 "Nasser", "Saeed", "Tamer", "Yasser"],
        "female": ["Fatima", "Layla", "Noor", "Zainab", "Mariam", "Yasmin", "Huda", "Amira", "Salma",
                   "Rania", "Leila", "Samira", "Nadia", "Hiba", "Dalia", "Lina", "Reem", "Farah", "Hala", "Rana",
                   "Dina", "Maha", "Nour", "Rasha", "Suha", "Lubna", "Mona", "Jamila", "Latifa", "Nawal",
                   "Randa", "Wafa", "Zahra", "Ghada"],
    },
}

# Capitalised words that may open a sentence right before a name and are never part of it ("When Sandra drank",
# "Thanks Katie!", "Hope that Chris", "Did Amy"): such a neighbour does not make the name a full one.
LEADING_WORDS = frozenset("""
when if and but so or as because while after before since though although then thanks thank hi hello hey dear
yes no oh ah wow did does do is was has had will would can could should where why how what who that with for to
from at by of in on about even only just also now today tonight yesterday maybe perhaps sorry congrats
congratulations hope tell ask told asked let
""".split())

# Words that may follow a first name in a sentence ("Tom said", "Amy and", "Ryan played"): pronouns,
# determiners, prepositions, conjunctions, auxiliaries and modals, common adverbs and interjections, and
# irregular past forms. A lower-case word after a name that is none of these, and not inflected like a verb or
# an adverb (-s, -ed, -ing, -ly), is taken for a surname written in lower case ("James yap"): the person is
# named in full and left alone (dynadesk.scoring.gender).
NAME_FOLLOWERS = frozenset("""
i me my mine you your yours he him his she her hers it its we us our ours they them their theirs himself herself
itself myself yourself ourselves themselves who whom whose which that this these those what whatever whoever
a an the some any no every each all both either neither another such much many more most few less least
and or but nor so yet for of to in on at by with from into onto about above across after against along among
around as before behind below beneath beside besides between beyond during except inside like near off out
outside over past since than through throughout till toward towards under underneath until up upon via within
without per vs versus because if unless while when where whether though although whereas then
am is are was were be been being has have had do does did will would can could shall should may might must
ought not never also just only even still already always often sometimes usually really very too quite rather
almost again now here there today tonight tomorrow yesterday soon later once twice ago back away down home
well alone together first last however instead perhaps maybe please yes ok okay oh ah wow yeah yay hey lol
haha omg thanks xx xo
said went came took gave told saw made got felt thought knew found kept left put ran won lost sat stood wrote
read brought bought caught taught sent spent built meant heard held paid led fell began broke chose drove ate
forgot hid hit let met rode rose sang shot shut slept spoke stole swam threw understood woke wore drank became
grew drew flew blew sold fought struck stuck hung shook tore swore froze dealt fed fled sped bent lent quit set
cut cost hurt beat bet burst cast spread split dug sank rang did gone done seen known given taken written
spoken broken chosen driven eaten fallen forgotten hidden risen shaken stolen thrown worn get go come make
take see know say tell think want need like love hate
""".split())

# Invisible characters for the zero-width suite.
ZERO_WIDTH = ("\u200b", "\u200c", "\u200d", "\u2060")


def name_index() -> dict[str, tuple[str, str, int]]:
    """Name -> (group, gender, position) for every listed first name."""
    return {name: (group, gender, i)
            for group, by_gender in FIRST_NAMES.items()
            for gender, names in by_gender.items()
            for i, name in enumerate(names)}
