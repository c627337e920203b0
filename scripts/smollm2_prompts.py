"""Chat prompts for distilling the SmolLM2 draft: questions, short code and JSON requests, built from
templates x topics. Every fifth topic, task and record is held out, so the held-out prompts ask
about things the draft never saw during training."""
import itertools
import random

TOPICS = [
    "photosynthesis", "the moon", "volcanoes", "coffee", "bicycles", "the internet", "honeybees", "rainbows",
    "the Roman Empire", "black holes", "chess", "the human heart", "electric cars", "glaciers", "the piano",
    "vaccines", "deserts", "the printing press", "octopuses", "recycling", "solar panels", "earthquakes",
    "the Olympic Games", "bread baking", "sleep", "the Amazon rainforest", "democracy", "compost", "tea",
    "the speed of light", "dinosaurs", "libraries", "the water cycle", "trains", "penguins", "gravity",
    "the stock market", "yoga", "tides", "the Great Wall of China", "batteries", "mushrooms", "jazz",
    "wind turbines", "the immune system", "maps", "clouds", "the Renaissance", "elephants", "cheese",
    "airplanes", "coral reefs", "the alphabet", "snow", "bridges", "robots", "the Sahara", "lightning",
    "friendship", "time zones", "museums", "oceans", "owls", "the telescope", "rice", "marathons",
]
QUESTIONS = [
    "What is {t}?", "Explain {t} in two sentences.", "Give three interesting facts about {t}.",
    "Why is {t} important?", "Write a short poem about {t}.", "How would you explain {t} to a child?",
    "List five words related to {t}.", "Write a one-paragraph summary about {t}.",
    "What are the pros and cons of {t}?", "Tell me a short story that involves {t}.",
    "What is a common misconception about {t}?", "Describe {t} in three bullet points.",
]
CODE_TASKS = [
    "reverses a string", "checks whether a number is prime", "returns the factorial of n",
    "counts the vowels in a string", "finds the largest number in a list", "computes the nth Fibonacci number",
    "removes duplicates from a list", "checks whether a word is a palindrome", "sorts a list of names",
    "converts Celsius to Fahrenheit", "sums the even numbers in a list", "merges two dictionaries",
    "counts the words in a sentence", "returns the average of a list of numbers", "flattens a nested list",
    "checks whether a year is a leap year", "finds the index of an item in a list", "capitalizes every word",
    "computes the greatest common divisor of two numbers", "reads a file and prints its lines",
]
CODE_TEMPLATES = [
    "Write a Python function that {c}.", "Write a JavaScript function that {c}.",
    "Show me Python code that {c}, with a short explanation.", "How do I write a function that {c} in Python?",
]
RECORDS = [
    ("a user", "name, age and email"), ("a book", "title, author and year"), ("a movie", "title, director and rating"),
    ("a city", "name, country and population"), ("a product", "name, price and in_stock"),
    ("a recipe", "name, ingredients and minutes"), ("a car", "make, model and year"),
    ("an employee", "name, role and salary"), ("a song", "title, artist and duration"),
    ("a restaurant", "name, cuisine and rating"), ("a planet", "name, moons and distance_from_sun"),
    ("a student", "name, grade and subjects"), ("an event", "title, date and location"),
    ("a pet", "name, species and age"), ("a country", "name, capital and language"),
]
JSON_TEMPLATES = [
    "Write a JSON object for {r} with the fields {f}.", "Give me an example JSON record of {r} ({f}).",
    "Return only JSON: {r} with {f}.", "Create a JSON list of two entries, each {r} with {f}.",
]


def _split(items: list, held_out: bool) -> list:
    return [x for i, x in enumerate(items) if (i % 5 == 4) == held_out]


def prompts(held_out: bool = False) -> list[str]:
    """Every combination for the chosen side of the split, in a fixed shuffled order."""
    out = [q.format(t=t) for q, t in itertools.product(QUESTIONS, _split(TOPICS, held_out))]
    out += [c.format(c=task) for c, task in itertools.product(CODE_TEMPLATES, _split(CODE_TASKS, held_out))]
    out += [j.format(r=r, f=f) for j, (r, f) in itertools.product(JSON_TEMPLATES, _split(RECORDS, held_out))]
    random.Random(0).shuffle(out)
    return out


if __name__ == "__main__":
    train, held = prompts(), prompts(held_out=True)
    print(len(train), "training prompts,", len(held), "held out; e.g.", train[:3], held[:3])
