"""A pygments lexer for shell lines: command names, options, values, and the topic names the
metadata cache knows (so a typo in a topic name shows before Enter)."""

from __future__ import annotations

from collections.abc import Callable, Container, Iterator

from pygments.lexer import Lexer
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, String, Text, _TokenType

from kafka_shell.declarations.parsing import HELP_FLAGS
from kafka_shell.declarations.registry import Command, Registry
from kafka_shell.face.repl.suggest import is_option, split_line


class KafkaShellLexer(Lexer):
    name = "kafka-shell"
    aliases = ["kafka-shell"]
    # Bound by `lexer_for`; pygments instantiates lexer classes itself.
    registry: Registry | None = None
    topics: Callable[[], Container[str]] = staticmethod(lambda: ())

    def get_tokens_unprocessed(self, text: str) -> Iterator[tuple[int, _TokenType, str]]:
        pos = 0
        words, comment = split_line(text)
        cmd = None
        for i, word in enumerate(words):
            if word.start > pos:
                yield pos, Text.Whitespace, text[pos:word.start]
            raw = text[word.start:word.end]
            if i == 0:
                cmd = self.registry.get(word.value) if self.registry is not None else None
                yield word.start, Keyword if cmd is not None else Error, raw
            elif is_option(word.value) and "=" in raw:
                name, _, value = raw.partition("=")
                yield word.start, self._option_token(cmd, name), name
                yield word.start + len(name), Operator, "="
                yield word.start + len(name) + 1, self._value_token(value, value), value
            elif is_option(word.value):
                yield word.start, self._option_token(cmd, word.value), raw
            else:
                yield word.start, self._value_token(word.value, raw), raw
            pos = word.end
        end = len(text) if comment is None else comment
        if pos < end:
            yield pos, Text.Whitespace, text[pos:end]
        if comment is not None:
            yield comment, Comment, text[comment:]

    @staticmethod
    def _option_token(cmd: Command | None, name: str) -> _TokenType:
        """An option the command does not take shows as an error before Enter."""
        if cmd is not None and cmd.option(name) is None and name not in HELP_FLAGS:
            return Error
        return Name.Attribute

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
