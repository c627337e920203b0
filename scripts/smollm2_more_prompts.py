"""More training prompts for the SmolLM2 drafts: new topics, tasks and records, each asked with a few
of a wider set of templates. The drafts generalise poorly to unseen topics (top-1 agreement 0.76-0.83
on training prompts, 0.54 on held-out ones), so the fix is more topics, not more answers per topic.
Nothing here names a held-out topic, task or record of smollm2_prompts.py (checked below), so the
held-out evaluation still asks about things the drafts never saw."""
import random
import re

from smollm2_prompts import CODE_TASKS, CODE_TEMPLATES, JSON_TEMPLATES, QUESTIONS, RECORDS, TOPICS, _split

MORE_TOPICS = """
the French Revolution|quantum computers|sharks|origami|the Nile|spiders|the Pythagorean theorem|kites
|hurricanes|the violin|wolves|the Industrial Revolution|soap|satellites|ants|camping|the Moon landing
|pizza|the Eiffel Tower|magnets|dolphins|the periodic table|umbrellas|the Silk Road|tornadoes|kangaroos
|the guitar|fossils|wine making|the Titanic|skyscrapers|hummingbirds|the stock exchange|lighthouses
|the Arctic|dreams|chocolate|submarines|the Mona Lisa|frogs|fire|the microscope|Mount Everest|hiking
|the blue whale|cryptography|the ancient Egyptians|pyramids|the solar system|Mars|Jupiter|comets
|the Big Bang|evolution|DNA|antibiotics|the brain|memory|happiness|meditation|nutrition|vitamins
|running|swimming|football|basketball|tennis|cricket|golf|skiing|surfing|the Tour de France
|the Beatles|opera|ballet|hip hop|photography|painting|sculpture|poetry|novels|Shakespeare
|the printing of money|inflation|taxes|banks|cryptocurrency|startups|marketing|advertising
|supply and demand|trade|globalization|the United Nations|elections|the Constitution|human rights
|climate change|pollution|forests|rivers|lakes|mountains|islands|caves|waterfalls|the rain
|the wind|seasons|autumn|winter|spring flowers|sunflowers|roses|trees|bamboo|cacti|seeds|farming
|tractors|cows|horses|sheep|chickens|bees and pollination|butterflies|eagles|parrots|crows|bats
|snakes|turtles|crocodiles|lions|tigers|giraffes|zebras|gorillas|pandas|koalas|foxes|rabbits
|squirrels|whales|jellyfish|starfish|crabs|salmon|plankton|algae|bacteria|viruses|the flu
|the common cold|exercise|stretching|posture|teeth|eyes|hearing|the skin|bones|muscles|blood
|the lungs|the stomach|hydration|cooking pasta|making soup|baking cookies|sushi|tacos|curry
|spices|salt|sugar|honey|olive oil|apples|bananas|oranges|strawberries|potatoes|tomatoes|carrots
|coffee shops|breakfast|picnics|birthdays|weddings|holidays|New Year|gardening|knitting|woodworking
|pottery|board games|video games|puzzles|magic tricks|juggling|cards|dice|toys|Lego|dolls|kites
|the wheel|the compass|the clock|the calendar|the telephone|radio|television|cameras|computers
|smartphones|email|social media|search engines|passwords|computer viruses|open source software
|programming languages|Python|JavaScript|databases|cloud computing|artificial intelligence
|machine learning|neural networks|self-driving cars|drones|3D printing|virtual reality|space
|space stations|rockets|astronauts|the International Space Station|the Hubble telescope|stars|galaxies
|the Milky Way|eclipses|meteors|the northern lights|the ozone layer|the atmosphere|oxygen|carbon
|water|ice|steam|electricity|light bulbs|nuclear power|coal|oil|natural gas|hydropower|geothermal
|energy|engines|cars|motorcycles|buses|ships|canals|ports|airports|roads|traffic lights|cities
|villages|houses|castles|cathedrals|temples|gardens|parks|zoos|schools|universities|teachers
|homework|exams|reading|writing|mathematics|fractions|geometry|algebra|statistics|probability
|physics|chemistry|biology|geology|astronomy|history|geography|philosophy|psychology|economics
|languages|grammar|translation|dictionaries|the Greek myths|the Vikings|samurai|knights|pirates
|explorers|Christopher Columbus|Marie Curie|Albert Einstein|Isaac Newton|Leonardo da Vinci
|Charles Darwin|Ada Lovelace|Nikola Tesla|Mozart|Beethoven|Cleopatra|Napoleon|the Aztecs|the Incas
|the Maya|ancient Rome|ancient Greece|the Middle Ages|the Cold War|World War I|World War II
|the Berlin Wall|the space race|money|saving money|budgeting|shopping|recycling plastic|kindness
|teamwork|leadership|patience|courage|honesty|curiosity|creativity|boredom|stress|laughter|music
|rhythm|drums|the flute|the trumpet|choirs|orchestras|movies|cartoons|comic books|fairy tales
|superheroes|detectives|mysteries|ghost stories|dragons|unicorns|robots in fiction|time travel
""".replace("\n", "").split("|")
MORE_QUESTIONS = [
    "Can you tell me about {t}?", "Summarize the history of {t} briefly.", "What should a beginner know about {t}?",
    "Give me two fun facts about {t}.", "Write a haiku about {t}.", "Explain how {t} works.",
    "What questions do people often ask about {t}?", "Compare {t} with something similar.",
    "Write a short dialogue between two friends about {t}.", "Give me a quiz question about {t} with its answer.",
]
MORE_CODE_TASKS = [
    "returns the square of every number in a list", "checks whether a string contains only digits",
    "counts how often each letter appears in a string", "returns the second largest number in a list",
    "converts a list of strings to uppercase", "finds the common elements of two lists",
    "generates the multiplication table of a number", "checks whether two words are anagrams",
    "returns the minimum and maximum of a list", "reverses the order of words in a sentence",
    "computes the sum of the digits of a number", "converts kilometres to miles",
    "checks whether a list is sorted", "returns the length of the longest word in a sentence",
    "counts the lines in a text", "removes the spaces from a string", "returns the median of a list",
    "converts a number to binary", "checks whether a number is even", "computes the area of a circle",
    "returns the first n prime numbers", "splits a list into chunks of size n", "joins a list of words with commas",
    "computes compound interest", "checks whether a string is a valid email address",
    "returns the keys of a dictionary sorted by value", "rotates a list by k positions",
    "computes the power of a number without using **", "finds the missing number in a list from 1 to n",
    "counts the uppercase letters in a string",
]
MORE_CODE_TEMPLATES = CODE_TEMPLATES + [
    "Write a function in Python that {c}, and show an example call.", "Give me a short Python snippet that {c}.",
]
MORE_RECORDS = [
    ("a laptop", "brand, ram_gb and price"), ("a hotel", "name, stars and city"), ("a flight", "number, origin and destination"),
    ("a tree", "species, height and age"), ("a customer", "id, name and orders"), ("a painting", "title, artist and year"),
    ("a game", "title, genre and players"), ("a team", "name, sport and wins"), ("a course", "title, teacher and credits"),
    ("an order", "id, items and total"), ("a phone", "brand, model and storage"), ("a museum", "name, city and founded"),
    ("a river", "name, length_km and countries"), ("a bird", "species, wingspan and habitat"),
    ("a podcast", "title, host and episodes"), ("a house", "address, rooms and price"), ("a bank account", "owner, balance and currency"),
    ("a task", "title, done and priority"), ("a sensor reading", "sensor, value and unit"), ("a language", "name, speakers and family"),
]
MORE_JSON_TEMPLATES = JSON_TEMPLATES + ["Output a JSON object describing {r} with keys {f}.", "I need JSON for {r}: {f}."]


def _held_out_words() -> list[str]:
    """Lower-case names of the held-out topics, tasks and records: no new prompt may contain one."""
    words = _split(TOPICS, True) + _split(CODE_TASKS, True) + [r for r, _ in _split(RECORDS, True)]
    return [w.lower().removeprefix("the ").removeprefix("a ") for w in words]


def more_prompts(per_topic: int = 8, per_task: int = 4, per_record: int = 4) -> list[str]:
    """New topics/tasks/records x a few of the (old + new) templates each, in a fixed shuffled order."""
    rng = random.Random(1)
    out = []
    for t in dict.fromkeys(MORE_TOPICS):
        out += [q.format(t=t) for q in rng.sample(QUESTIONS + MORE_QUESTIONS, per_topic)]
    for c in MORE_CODE_TASKS:
        out += [q.format(c=c) for q in rng.sample(MORE_CODE_TEMPLATES, per_task)]
    for r, f in MORE_RECORDS:
        out += [q.format(r=r, f=f) for q in rng.sample(MORE_JSON_TEMPLATES, per_record)]
    held = re.compile("|".join(rf"\b{re.escape(w)}\b" for w in _held_out_words()))
    out = [p for p in out if not held.search(p.lower())]
    rng.shuffle(out)
    return out


if __name__ == "__main__":
    extra = more_prompts()
    print(len(extra), "prompts; e.g.", extra[:5])
