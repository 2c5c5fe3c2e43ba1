"""The benchmark's classes by id, from JSON configuration files.

Five registries: data, model, trainer, server and hook. Each is a file of the configuration
directory, <kind>_configurations.json, mapping an id to an entry:

    {"DummyModel": {"class": "DummyModel", "configurations": {"num_embeddings": 1024, ...}}}

"class" names a class the benchmark knows for that kind (CLASSES below); "configurations"
are its keyword arguments, checked against the class's own list of what it takes. A server
entry also names the hook its trainers use ("hook") and how many servers it runs unless
--nserver says otherwise ("servers"). An error names the file, the path inside it and what
was expected; an unknown id names the registry and every id it has.
"""
import json
import os

KINDS = ("data", "model", "trainer", "server", "hook")
DEFAULT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configurations")


class ConfigError(Exception):
    """A configuration file or id the benchmark cannot use; the message says why."""


def config_file(kind, directory=None):
    return os.path.join(directory or DEFAULT_DIR, "%s_configurations.json" % kind)


def _load(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise ConfigError("%s: cannot read it: %s" % (path, e.strerror)) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError("%s: line %d column %d: not JSON: %s" %
                          (path, e.lineno, e.colno, e.msg)) from None
    if not isinstance(doc, dict) or not doc:
        raise ConfigError("%s: $: expected an object of ids, got %s" %
                          (path, type(doc).__name__ if doc != {} else "an empty object"))
    return doc


def _type_name(want):
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(want, want.__name__)


def check_value(path, where, value, want):
    """value against want: a type, or (type, lo, hi) for numbers in [lo, hi]."""
    lo = hi = None
    if isinstance(want, tuple):
        want, lo, hi = want
    ok = isinstance(value, want) and not (want in (int, float) and isinstance(value, bool))
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        ok = True
    if not ok:
        raise ConfigError("%s: %s: expected %s, got %s" %
                          (path, where, _type_name(want), json.dumps(value)))
    if lo is not None and value < lo or hi is not None and value > hi:
        raise ConfigError("%s: %s: %s is out of range [%s, %s]" % (path, where, value, lo, hi))
    return value


class Registry:
    """The entries of one kind: their ids, and each one's class and arguments."""

    def __init__(self, kind, classes, directory=None):
        self.kind = kind
        self.path = config_file(kind, directory)
        self.entries = {}
        doc = _load(self.path)
        for ident, entry in doc.items():
            self.entries[ident] = self._entry(ident, entry, classes)

    def _entry(self, ident, entry, classes):
        where = "$.%s" % ident
        if not isinstance(entry, dict):
            raise ConfigError("%s: %s: expected an object, got %s" %
                              (self.path, where, json.dumps(entry)))
        extra = EXTRA_FIELDS.get(self.kind, {})
        for k in entry:
            if k not in ("class", "configurations") and k not in extra:
                raise ConfigError("%s: %s.%s: unknown field (known: %s)" % (
                    self.path, where, k, ", ".join(["class", "configurations", *extra])))
        name = entry.get("class")
        if name is None and self.kind == "server":
            cls = None                   # no server processes (allreduce)
        elif not isinstance(name, str) or name not in classes:
            raise ConfigError("%s: %s.class: %s is not a %s class (known: %s)" % (
                self.path, where, json.dumps(name), self.kind, ", ".join(sorted(classes))))
        else:
            cls = classes[name]
        args = entry.get("configurations", {})
        if not isinstance(args, dict):
            raise ConfigError("%s: %s.configurations: expected an object, got %s" %
                              (self.path, where, json.dumps(args)))
        takes = getattr(cls, "TAKES", {}) if cls is not None else {}
        for k, v in args.items():
            if k not in takes:
                raise ConfigError("%s: %s.configurations.%s: %s takes no such setting "
                                  "(it takes: %s)" % (self.path, where, k, name,
                                                      ", ".join(sorted(takes)) or "none"))
            check_value(self.path, "%s.configurations.%s" % (where, k), v, takes[k])
        out = {"id": ident, "class": cls, "configurations": dict(args)}
        for k, want in extra.items():
            if k in entry:
                out[k] = check_value(self.path, "%s.%s" % (where, k), entry[k], want)
        return out

    def get(self, ident):
        e = self.entries.get(ident)
        if e is None:
            raise ConfigError("unknown %s '%s': %s has %s" % (
                self.kind, ident, self.path, ", ".join(sorted(self.entries))))
        return e

    def create(self, ident, *args):
        e = self.get(ident)
        return e["class"](*args, **e["configurations"])


# What a server entry says beside its class: its trainers' hook, and its servers by default.
EXTRA_FIELDS = {
    "server": {"hook": str, "servers": (int, 0, 64)},
}


def load_all(classes, directory=None):
    """Every registry: {kind: Registry}. classes: {kind: {name: class}}."""
    regs = {k: Registry(k, classes[k], directory) for k in KINDS}
    for ident, e in regs["server"].entries.items():
        if "hook" not in e:
            raise ConfigError("%s: $.%s.hook: missing (the hook its trainers use)" %
                              (regs["server"].path, ident))
        if e["hook"] not in regs["hook"].entries:
            raise ConfigError("%s: $.%s.hook: unknown hook '%s': %s has %s" % (
                regs["server"].path, ident, e["hook"], regs["hook"].path,
                ", ".join(sorted(regs["hook"].entries))))
        e.setdefault("servers", 1 if e["class"] is not None else 0)
    return regs
