"""JSON Schemas and regexes of real-world shape for the constraint tests. Strings, arrays and
recursion are bounded where a random model could otherwise ramble past the token budget."""

NAME = {"type": "string", "minLength": 1, "maxLength": 12}
EMAIL = {"type": "string", "pattern": "^[a-z0-9.]{1,12}@[a-z]{1,8}\\.(com|org)$"}
POINT = {"type": "object", "properties": {"x": {"type": "integer", "minimum": -99, "maximum": 99},
                                          "y": {"type": "integer", "minimum": -99, "maximum": 99}},
         "required": ["x", "y"], "additionalProperties": False}

SCHEMAS = {
    "person": {"type": "object", "properties": {"name": NAME, "age": {"type": "integer", "minimum": 0, "maximum": 120},
                                                "email": EMAIL}, "required": ["name", "age"], "additionalProperties": False},
    "address": {"type": "object", "properties": {
        "street": {"type": "string", "maxLength": 20}, "city": NAME,
        "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
        "country": {"enum": ["US", "DE", "FR", "JP", "BR"]}},
        "required": ["street", "city", "zip", "country"], "additionalProperties": False},
    "product": {"type": "object", "properties": {
        "id": {"type": "integer", "minimum": 1, "maximum": 99999}, "name": NAME,
        "price": {"type": "number", "minimum": 0, "maximum": 10000},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 3}},
        "required": ["id", "name", "price"], "additionalProperties": False},
    "order": {"type": "object", "properties": {
        "order_id": {"type": "string", "pattern": "^ORD-[0-9]{4}$"},
        "items": {"type": "array", "minItems": 1, "maxItems": 3, "items": {
            "type": "object", "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}[0-9]{2}$"},
                                             "qty": {"type": "integer", "minimum": 1, "maximum": 9}},
            "required": ["sku", "qty"], "additionalProperties": False}}},
        "required": ["order_id", "items"], "additionalProperties": False},
    "color_enum": {"enum": ["red", "green", "blue"]},
    "int_enum": {"enum": [1, 2, 3, 5, 8]},
    "mixed_enum": {"enum": ["auto", 0, True, None]},
    "const_version": {"type": "object", "properties": {"version": {"const": "1.0"}, "ok": {"type": "boolean"}},
                      "required": ["version", "ok"], "additionalProperties": False},
    "any_of": {"type": "object", "properties": {"value": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 999},
                                                                    {"type": "string", "maxLength": 5}]}},
               "required": ["value"], "additionalProperties": False},
    "one_of": {"oneOf": [{"type": "integer", "minimum": 0, "maximum": 9}, {"type": "boolean"}]},
    "refs": {"$defs": {"point": POINT}, "type": "object",
             "properties": {"start": {"$ref": "#/$defs/point"}, "end": {"$ref": "#/$defs/point"}},
             "required": ["start", "end"], "additionalProperties": False},
    "recursive_tree": {"$defs": {"node": {"type": "object", "properties": {
        "value": {"type": "integer", "minimum": 0, "maximum": 9},
        "children": {"type": "array", "maxItems": 1, "items": {"$ref": "#/$defs/node"}}},
        "required": ["value"], "additionalProperties": False}}, "$ref": "#/$defs/node"},
    "date": {"type": "string", "format": "date"},
    "uuid": {"type": "string", "format": "uuid"},
    "ipv4": {"type": "string", "format": "ipv4"},  # not exact in xgrammar (see INEXACT)
    "date_time": {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}},
                  "required": ["at"], "additionalProperties": False},
    "optional_props": {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9},
                                                        "b": {"type": "boolean"}, "c": {"type": "null"}},
                       "additionalProperties": False},
    "nested_3": {"type": "object", "properties": {"outer": {"type": "object", "properties": {
        "middle": {"type": "object", "properties": {"inner": {"type": "boolean"}}, "required": ["inner"],
                   "additionalProperties": False}}, "required": ["middle"], "additionalProperties": False}},
        "required": ["outer"], "additionalProperties": False},
    "enum_array": {"type": "array", "items": {"enum": ["read", "write", "admin"]}, "minItems": 2, "maxItems": 4},
    "float_bounds": {"type": "object", "properties": {
        "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "score": {"type": "number", "minimum": -5.5, "maximum": 5.5}},
        "required": ["ratio", "score"], "additionalProperties": False},
    "flags": {"type": "object", "properties": {"verbose": {"type": "boolean"}, "dry_run": {"type": "boolean"},
                                               "force": {"type": "boolean"}},
              "required": ["verbose", "dry_run", "force"], "additionalProperties": False},
    "nullable": {"type": "object", "properties": {"nickname": {"type": ["string", "null"], "maxLength": 8}},
                 "required": ["nickname"], "additionalProperties": False},
    "tuple": {"type": "array", "prefixItems": [NAME, {"type": "integer", "minimum": 0, "maximum": 9}], "items": False,
              "minItems": 2},
    "phone": {"type": "object", "properties": {"phone": {"type": "string", "pattern": "^\\+[0-9]{1,3}-[0-9]{3}-[0-9]{4}$"}},
              "required": ["phone"], "additionalProperties": False},
    "event": {"type": "object", "properties": {
        "title": NAME, "day": {"type": "string", "format": "date"},
        "attendees": {"type": "array", "items": EMAIL, "maxItems": 2}},
        "required": ["title", "day", "attendees"], "additionalProperties": False},
    "config": {"type": "object", "properties": {
        "debug": {"type": "boolean"}, "level": {"enum": ["debug", "info", "warn", "error"]},
        "retries": {"type": "integer", "minimum": 0, "maximum": 5},
        "timeout": {"type": "number", "minimum": 0, "maximum": 60}},
        "required": ["debug", "level", "retries", "timeout"], "additionalProperties": False},
    "api_response": {"type": "object", "properties": {
        "status": {"enum": ["ok", "error"]},
        "data": {"type": "object", "properties": {"items": {"type": "array", "maxItems": 2, "items": {
            "type": "object", "properties": {"id": {"type": "integer", "minimum": 0, "maximum": 999}, "name": NAME},
            "required": ["id", "name"], "additionalProperties": False}}}, "required": ["items"],
            "additionalProperties": False}},
        "required": ["status", "data"], "additionalProperties": False},
    "geo": {"type": "object", "properties": {"lat": {"type": "number", "minimum": -90, "maximum": 90},
                                             "lon": {"type": "number", "minimum": -180, "maximum": 180}},
            "required": ["lat", "lon"], "additionalProperties": False},
    "hex_color": {"type": "string", "pattern": "^#[0-9a-f]{6}$"},
    "semver": {"type": "string", "pattern": "^[0-9]{1,2}\\.[0-9]{1,2}\\.[0-9]{1,3}$"},
    "int_array": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 99}, "minItems": 1, "maxItems": 5},
    "bounded_string": {"type": "string", "minLength": 2, "maxLength": 6},
    "key_value": {"type": "object", "properties": {"key": {"type": "string", "pattern": "^[a-z_]{1,10}$"},
                                                   "value": {"type": ["integer", "boolean"], "minimum": 0, "maximum": 9}},
                  "required": ["key", "value"], "additionalProperties": False},
    "matrix": {"type": "array", "minItems": 2, "maxItems": 2, "items": {
        "type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "integer", "minimum": 0, "maximum": 9}}},
}

REGEXES = {
    "date": r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])",
    "ipv4": r"((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])",
    "email": r"[a-z0-9._%+-]{1,16}@[a-z0-9-]{1,12}\.(com|org|net|io)",
    "us_phone": r"\(?[0-9]{3}\)?[- ][0-9]{3}-[0-9]{4}",
    "semver": r"(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})(-(alpha|beta|rc)\.[0-9]{1,2})?",
    "time": r"([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?",
    "hex_color": r"#[0-9a-fA-F]{6}",
    "uuid": r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    "zip": r"[0-9]{5}(-[0-9]{4})?",
    "answer": r"(yes|no|maybe)",
    "identifier": r"[A-Za-z_][A-Za-z0-9_]{0,15}",
    "currency": r"\$[0-9]{1,3}(,[0-9]{3}){0,2}\.[0-9]{2}",
    "url": r"https://[a-z]{1,10}\.(com|org)(/[a-z]{1,8}){0,3}",
}

# Schemas a backend does not enforce exactly: compiled, with a note naming what it lets through.
# backend -> name -> (what its note says, what the check says of an output it lets through; None: none can be)
_DATES = {"date": ("format date", "is not a 'date'"), "event": ("format date", "is not a 'date'"),
          "date_time": ("format date-time", "is not a 'date-time'")}  # xgrammar: 2025-04-31; both: 2025-02-29
INEXACT = {"xgrammar": {"ipv4": ("format ipv4", "is not a 'ipv4'"), "one_of": ("oneOf is enforced as anyOf", None),
                        **_DATES},
           "llguidance": _DATES}
