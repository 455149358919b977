"""YAML for the entries' front matter: safe_load semantics, anchors and aliases
refused (:mod:`ledger.core.model.documents` says why), libyaml's loader when it can.

Apart from :mod:`ledger.core.model.documents` so that PyYAML (a tenth of a cold
read's imports) is imported only by a process that parses or writes front matter:
a ``status``, ``next`` or ``report`` served from the entry cache parses none.
"""

from __future__ import annotations

from typing import Any

import yaml

from ledger.core.errors import BadInput


class _NoAliasLoader(yaml.SafeLoader):
    """SafeLoader that refuses anchors and aliases."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.events.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.constructor.ConstructorError(
                None, None, "YAML aliases are not allowed in ledger entries", event.start_mark
            )
        node = super().compose_node(parent, index)
        if node is not None and getattr(node, "anchor", None):
            raise yaml.constructor.ConstructorError(
                None, None, "YAML anchors are not allowed in ledger entries", node.start_mark
            )
        return node


_FAST_LOADER: Any = getattr(yaml, "CSafeLoader", None)
_TAG = "tag:yaml.org,2002:"
_PLAIN_TAGS: dict[str, str] = {}  # plain scalar -> its implicit tag (a function of its text)
_PLAIN_MEMO_LIMIT = 1 << 16


class _Slow(Exception):
    """A node the direct construction below leaves to PyYAML's own constructor."""


if _FAST_LOADER is not None:

    class _CLoader(_FAST_LOADER):  # type: ignore[misc]
        """libyaml's safe loader whose tag resolution is remembered per plain scalar.

        SafeLoader resolves a plain scalar's tag from its text alone (no path
        resolvers): the same keys and values recur in every entry of a ledger."""

        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            if kind is yaml.ScalarNode and implicit[0]:
                tag = _PLAIN_TAGS.get(value)
                if tag is None:
                    tag = super().resolve(kind, value, implicit)
                    if len(_PLAIN_TAGS) < _PLAIN_MEMO_LIMIT:
                        _PLAIN_TAGS[value] = tag
                return tag
            return super().resolve(kind, value, implicit)


def _construct(loader: Any, node: Any) -> Any:
    """What SafeConstructor makes of ``node`` for the common tags (str, null, bool,
    int, float, seq, map), built directly; anything else raises :class:`_Slow`.

    PyYAML's constructor keeps per-node bookkeeping for aliases and recursive
    structures, which text without '&' and '*' cannot have; scalars go through
    SafeConstructor's own methods, so the values are the ones it makes."""
    kind = type(node)
    tag = node.tag
    if kind is yaml.ScalarNode:
        if tag == _TAG + "str":
            return node.value
        if tag == _TAG + "null":
            return None
        if tag == _TAG + "bool":
            return loader.construct_yaml_bool(node)
        if tag == _TAG + "int":
            return loader.construct_yaml_int(node)
        if tag == _TAG + "float":
            return loader.construct_yaml_float(node)
    elif kind is yaml.SequenceNode and tag == _TAG + "seq":
        return [_construct(loader, child) for child in node.value]
    elif kind is yaml.MappingNode and tag == _TAG + "map":
        mapping = {}
        for key_node, value_node in node.value:
            # Merge ('<<') and value ('=') keys are SafeConstructor's to flatten.
            if type(key_node) is not yaml.ScalarNode or key_node.tag in (
                _TAG + "merge",
                _TAG + "value",
            ):
                raise _Slow
            mapping[_construct(loader, key_node)] = _construct(loader, value_node)
        return mapping
    raise _Slow


def _load_c(text: str) -> Any:
    """``yaml.load(text, Loader=CSafeLoader)``, the same values built faster."""
    loader = _CLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            return _construct(loader, node)
        except Exception:  # PyYAML's own constructor decides, as before
            return loader.construct_document(node)
    finally:
        loader.dispose()


def load(text: str, where: str, first_line: int) -> Any:
    """``text`` read as YAML (safe_load semantics, no anchor or alias); ``first_line``:
    the line of the file ``where`` it starts on, for the message."""
    if _FAST_LOADER is not None and "&" not in text and "*" not in text:
        # No '&' or '*': no anchor or alias can be in it, so libyaml's safe loader reads
        # it as the pure-Python one would, many times faster (verify replays every
        # entry of a long ledger). Whatever it refuses is read again below for the
        # message; libyaml caps nesting itself, so deep nesting is an error, not a crash.
        try:
            return _load_c(text)
        except (yaml.YAMLError, RecursionError):
            pass
    try:
        return yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        # The first line of the message is the context ("while parsing a flow
        # sequence") when there is one: its line is the one to name.
        mark = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + first_line})" if mark is not None else ""
        raise BadInput(f"{where}: invalid YAML front matter{at}: {reason}") from None


def dump(data: dict[str, Any]) -> str:
    """:func:`ledger.core.model.documents.dump_yaml`."""
    text: str = yaml.safe_dump(
        data, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1 << 16
    )
    if yaml.safe_load(text) != data:
        text = yaml.safe_dump(
            data, sort_keys=False, allow_unicode=False, default_flow_style=False, width=1 << 16
        )
    return text
