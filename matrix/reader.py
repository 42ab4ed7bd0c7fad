"""The one reader of the farm's YAML: every file of matrix/ is parsed here with the same strict
rules, checked against its JSON Schema (matrix/schema/) and every problem collected as
`file:line: key: message`, with the allowed values and "did you mean" for typos (cibuildwheel's
habit: one reader, unknown keys refused). The per-file loaders build typed views on top."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from yaml._yaml import CParser
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from wheelfarm.core.errors import ConfigError

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator, ValidationError

# Input bounds. The shipped files are a few KB and nest six levels deep; anything far past that
# is a mistake or an attack, and PyYAML composes recursively, so depth is bounded before it is.
MAX_FILE_BYTES = 1 << 20
MAX_DEPTH = 32
MAX_PROBLEMS = 200  # past this the maintainer fixes the first ones and runs validate again
MAX_LINE = 400  # one problem line; a value is shown clipped

_STR = "tag:yaml.org,2002:str"


@dataclass
class Problems:
    """Gathers problems across files so the maintainer fixes them all in one pass: each one
    line, and no more than MAX_PROBLEMS of them."""

    problems: list[str] = field(default_factory=list)
    dropped: int = 0

    def add(self, file: Path, line: int, key: str, message: str) -> None:
        where = f"{file}:{line}" if line else str(file)
        text = f"{where}: {key}: {message}" if key else f"{where}: {message}"
        text = " ".join(text.splitlines())
        if len(self.problems) >= MAX_PROBLEMS:
            self.dropped += 1
        else:
            self.problems.append(short(text))

    @property
    def total(self) -> int:
        """Every problem found, shown or not."""
        return len(self.problems) + self.dropped

    def report(self) -> list[str]:
        more = [f"... and {self.dropped} more problems: fix these first"] if self.dropped else []
        return self.problems + more

    def check(self) -> None:
        """Raise ConfigError with every problem found, if there is one."""
        if self.total:
            raise ConfigError(self.report())


class _Refused(yaml.MarkedYAMLError):
    """Valid YAML the farm refuses: an alias, a duplicate or non-string key, deep nesting."""

    def __init__(self, problem: str, mark: yaml.Mark | None) -> None:
        super().__init__(problem=problem, problem_mark=mark)


class _StrictLoader(CParser, Composer, SafeConstructor, Resolver):
    """SafeLoader minus what the farm's YAML never needs and an attacker or a slip uses:
    aliases (13 lines can expand to gigabytes), duplicate keys (the second silently wins),
    keys that are not strings (`12.8:` is a float) and nesting past MAX_DEPTH. libyaml scans and
    parses (a sixth of PyYAML's own time on the catalog's 53 files); the nodes are composed here,
    in Python, so that each passes compose_node's checks."""

    get_single_node = Composer.get_single_node  # not CParser's, which composes in C

    def __init__(self, stream: str) -> None:
        CParser.__init__(self, stream)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:  # noqa: ANN401 - PyYAML's own signature
        event = cast("yaml.Event", self.peek_event())  # one is due: the composer asked for a node
        if isinstance(event, yaml.AliasEvent):
            msg = (
                f"alias *{event.anchor} refused: write the value out "
                f"(aliases can expand a few lines into gigabytes)"
            )
            raise _Refused(msg, cast("yaml.Mark", event.start_mark))
        if self._depth >= MAX_DEPTH:
            msg = f"nested deeper than {MAX_DEPTH} levels; the farm's files need a handful"
            raise _Refused(msg, cast("yaml.Mark", event.start_mark))
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:  # noqa: ANN401, FBT001, FBT002 - PyYAML's own signature
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:  # e.g. `2024-13-01` read as a date
            kind = node.tag.rsplit(":", 1)[-1]
            msg = f"{clip(node.value)} cannot be read as a {kind} ({exc}); quote it"
            raise _Refused(msg, node.start_mark) from exc

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:  # noqa: FBT001, FBT002 - PyYAML's own signature
        first: dict[str, int] = {}
        for key, _ in node.value:
            if not (isinstance(key, yaml.ScalarNode) and key.tag == _STR):
                msg = f'key {clip(key.value)} is not a string: quote it (e.g. "12.8":)'
                raise _Refused(msg, key.start_mark)
            if key.value in first:
                msg = (
                    f"duplicate key {key.value!r} (first on line {first[key.value]}); the second "
                    f"would silently replace the first: keep one"
                )
                raise _Refused(msg, key.start_mark)
            first[key.value] = key.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


def _parse_yaml(text: str) -> tuple[Any, yaml.Node | None]:
    """The value and node tree of one YAML document, read with the farm's strict rules (see
    _StrictLoader); raises yaml.YAMLError. Other readers of the farm's YAML should use it too."""
    try:
        loader = _StrictLoader(text)  # libyaml reads UTF-8 bytes
    except UnicodeEncodeError as exc:  # a lone surrogate: no file read as UTF-8 holds one
        msg = f"not UTF-8 text ({exc.reason} at character {exc.start})"
        raise _Refused(msg, None) from exc
    try:
        tree = loader.get_single_node()
        return (loader.construct_document(tree) if tree is not None else None), tree
    finally:
        loader.dispose()


def short(text: str, limit: int = MAX_LINE) -> str:
    """`text` cut to `limit` characters: a message repeats a value, never a megabyte of it.

    >>> short("x" * 10, 8), clip("x" * 100, 10)
    ('xxxxx...', "'xxxxxx...")
    """
    return text if len(text) <= limit else text[: limit - 3] + "..."


def clip(value: object, limit: int = 80) -> str:
    """Repr of a value from the input, cut short."""
    return short(repr(value), limit)


@cache
def _validator(schemas: Path, name: str) -> Draft202012Validator:
    """The validator for one file kind, from the farm root's own schemas (cached per folder).
    jsonschema is imported here, when a file is checked: a module that only names the
    matrix's types (the index's) does not pay its 5 MB."""
    from jsonschema import Draft202012Validator  # noqa: PLC0415 - see above
    from referencing import Registry, Resource  # noqa: PLC0415 - see above

    resources = []
    for path in schemas.glob("*.schema.json"):
        schema = json.loads(path.read_text(encoding="utf-8"))
        resources.append((schema["$id"], Resource.from_contents(schema)))
    registry: Registry[Any] = Registry().with_resources(resources)
    schema = json.loads((schemas / f"{name}.schema.json").read_text(encoding="utf-8"))
    return Draft202012Validator(schema, registry=registry)


def line_at(node: yaml.Node | None, path: list[str | int]) -> tuple[int, yaml.Node | None]:
    """1-based line of the value at `path` in a composed YAML tree (the deepest node found)."""
    current = node
    for step in path:
        if isinstance(current, yaml.MappingNode):
            match = next((v for k, v in current.value if k.value == step), None)
        elif isinstance(current, yaml.SequenceNode) and isinstance(step, int):
            match = current.value[step] if step < len(current.value) else None
        else:
            match = None
        if match is None:
            break
        current = match
    return (current.start_mark.line + 1 if current is not None else 0), current


def _key_line(node: yaml.Node | None, key: str) -> int:
    if isinstance(node, yaml.MappingNode):
        for k, _ in node.value:
            if k.value == key:
                return int(k.start_mark.line) + 1
    return node.start_mark.line + 1 if node is not None else 0


def dotted(path: list[str | int]) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else step)
    return out or "(top level)"


def _schema_problems(
    error: ValidationError, tree: yaml.Node | None, schema: str
) -> Iterator[tuple[int, str, str]]:
    """Turn one jsonschema error into (line, key, message) with the allowed values and a hint."""
    path = list(error.absolute_path)
    line, node = line_at(tree, path)
    key = dotted(path)
    if error.validator == "additionalProperties":
        yield from _unknown_keys(error, node, path)
    elif error.validator == "enum":
        allowed = [str(v) for v in cast("list[Any]", error.validator_value)]
        tip = _did_you_mean(str(error.instance), allowed)
        yield (
            line,
            key,
            f"{clip(error.instance)} is not allowed{tip} (allowed: {', '.join(allowed)})",
        )
    elif error.validator == "oneOf" and path and path[-1] == "source":
        chosen = _chosen_form(error)
        for sub in chosen:
            yield from _schema_problems(sub, tree, schema)
        if not chosen:
            yield line, key, _not_a_source(error)
    elif error.validator == "required":
        missing = str(error.message).split("'")[1]
        where = f"matrix/schema/{schema}.schema.json"
        yield line, dotted([*path, missing]), f"missing: this key is required (see {where})"
    elif error.validator == "pattern":
        why = cast("dict[str, Any]", error.schema).get("description")  # the rule in words
        rule = why or f"the pattern {error.validator_value}"
        yield line, key, f"{clip(error.instance)} does not match {rule}"
    else:
        yield line, key, short(error.message)


def _did_you_mean(value: str, allowed: list[str]) -> str:
    hint = difflib.get_close_matches(value, allowed, n=1)
    return f"; did you mean {hint[0]!r}?" if hint else ""


def _unknown_keys(
    error: ValidationError, node: yaml.Node | None, path: list[str | int]
) -> Iterator[tuple[int, str, str]]:
    """One problem per key the schema does not know, at that key's own line; the hint comes
    before the allowed keys, which a long list would otherwise clip off the line."""
    allowed = sorted(cast("dict[str, Any]", error.schema).get("properties", {}))
    for extra in sorted(set(cast("dict[str, Any]", error.instance)) - set(allowed)):
        yield (
            _key_line(node, extra),
            dotted([*path, extra]),
            f"unknown key {extra!r}{_did_you_mean(extra, allowed)} (allowed: {', '.join(allowed)})",
        )


def _not_a_source(error: ValidationError) -> str:
    """A package source that fits none of the forms and has no form's required keys."""
    forms = cast("list[dict[str, Any]]", error.validator_value)
    known = sorted({k for form in forms for k in form.get("properties", {})})
    instance = error.instance if isinstance(error.instance, dict) else {}
    hints = [
        f"{k!r} -> did you mean {m[0]!r}?"
        for k in sorted(set(instance) - set(known))
        if (m := difflib.get_close_matches(k, known, n=1))
    ]
    return (
        f"{clip(error.instance)} is not a source: use {{sdist: NAME, sha256: HEX}}, "
        "{git: URL, commit: SHA40} or {path: FOLDER}" + (f" ({'; '.join(hints)})" if hints else "")
    )


def _chosen_form(error: ValidationError) -> list[ValidationError]:
    """For a source that fits no form: the errors of the form whose required keys it has, so a
    git source with a bad URL hears about the URL, not about every form there is."""
    forms = cast("list[dict[str, Any]]", error.validator_value)
    have = set(error.instance) if isinstance(error.instance, dict) else set()
    for i, form in enumerate(forms):
        if set(form.get("required", ())) <= have:
            return [e for e in error.context or () if e.relative_schema_path[0] == i]
    return []


def read_yaml(path: Path, schemas: Path, schema: str, errors: Problems) -> tuple[Any, Document]:
    """Parse one file and check it against `schema` (matrix/schema/SCHEMA.schema.json): its data,
    None when it has a problem (each one collected; a syntax error stops that file only), and
    the Document that places further problems at their lines."""
    doc = Document(path, None, errors)
    text = _text(path, errors)
    if text is None:
        return None, doc
    try:
        data, doc.tree = _parse_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        label = "" if isinstance(exc, _Refused) else "YAML syntax error: "
        label += f"{context}: " if context else ""
        errors.add(path, mark.line + 1 if mark else 0, "", f"{label}{problem}")
        return None, doc
    before = errors.total
    for error in sorted(
        _validator(schemas, schema).iter_errors(data), key=lambda e: list(map(str, e.path))
    ):
        for line, key, message in _schema_problems(error, doc.tree, schema):
            errors.add(path, line, key, message)
    return (data if errors.total == before else None), doc


def _text(path: Path, errors: Problems) -> str | None:
    """The file's text, or None with the reason collected (too large, not UTF-8, unreadable)."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            errors.add(path, 0, "", f"larger than {MAX_FILE_BYTES} bytes; split it or trim it")
            return None
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        errors.add(path, 0, "", f"not UTF-8 ({exc.reason} at byte {exc.start}): save it as UTF-8")
    except OSError as exc:
        errors.add(path, 0, "", f"cannot read it: {exc.strerror or exc}")
    return None


@dataclass
class Document:
    """One YAML file being checked: reports problems at the line of a path in its tree."""

    path: Path
    tree: yaml.Node | None
    errors: Problems

    def add(self, where: list[str | int], message: str) -> None:
        self.errors.add(self.path, line_at(self.tree, where)[0], dotted(where), message)

    def spec(self, value: str | None, where: list[str | int]) -> SpecifierSet:
        try:
            return SpecifierSet(value or "")
        except InvalidSpecifier:
            self.add(where, f"{value!r} is not a PEP 440 specifier (e.g. '>=2.6')")
            return SpecifierSet()
