"""A pygments lexer for shell lines: command names, options, values, and the topic names the
metadata cache knows (so a typo in a topic name shows before Enter)."""

from __future__ import annotations

from collections.abc import Callable, Container, Iterator

from pygments.lexer import Lexer
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, String, Text, _TokenType

from kafka_shell.registry import Registry
from kafka_shell.repl.suggest import is_option, split_line


class KafkaShellLexer(Lexer):
    name = "kafka-shell"
    aliases = ["kafka-shell"]
    # Bound by `lexer_for`; pygments instantiates lexer classes itself.
    registry: Registry | None = None
    topics: Callable[[], Container[str]] = staticmethod(lambda: ())

    def get_tokens_unprocessed(self, text: str) -> Iterator[tuple[int, _TokenType, str]]:
        pos = 0
        words, comment = split_line(text)
        for i, word in enumerate(words):
            if word.start > pos:
                yield pos, Text.Whitespace, text[pos:word.start]
            raw = text[word.start:word.end]
            if i == 0:
                known = self.registry is not None and self.registry.get(word.value) is not None
                yield word.start, Keyword if known else Error, raw
            elif is_option(word.value) and "=" in raw:
                name, _, value = raw.partition("=")
                yield word.start, Name.Attribute, name
                yield word.start + len(name), Operator, "="
                yield word.start + len(name) + 1, self._value_token(value, value), value
            elif is_option(word.value):
                yield word.start, Name.Attribute, raw
            else:
                yield word.start, self._value_token(word.value, raw), raw
            pos = word.end
        end = len(text) if comment is None else comment
        if pos < end:
            yield pos, Text.Whitespace, text[pos:end]
        if comment is not None:
            yield comment, Comment, text[comment:]

    def _value_token(self, value: str, raw: str) -> _TokenType:
        if value in self.topics():
            return Name.Class
        if value.lstrip("-").isdigit() and raw == value:
            return Number
        return String


def lexer_for(registry: Registry, topics: Callable[[], Container[str]]) -> type[KafkaShellLexer]:
    """A lexer class bound to the registry and to a function returning the known topic names."""
    return type("BoundKafkaShellLexer", (KafkaShellLexer,),
                {"registry": registry, "topics": staticmethod(topics)})
