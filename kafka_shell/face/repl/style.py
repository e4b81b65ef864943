"""Colours: the lexer's token classes, the completion menu and the bottom toolbar."""

from __future__ import annotations

from prompt_toolkit.styles import Style


def create_style() -> Style:
    return Style.from_dict({
        # PygmentsLexer turns Token.Name.Attribute into class:pygments.name.attribute, etc.
        "pygments.keyword": "bold ansigreen",
        "pygments.error": "ansired",
        "pygments.name.attribute": "ansicyan",
        "pygments.name.class": "bold ansiblue",      # a topic the cache knows
        "pygments.literal.string": "ansiyellow",
        "pygments.literal.number": "ansimagenta",
        "pygments.operator": "ansicyan",
        "pygments.comment": "italic ansibrightblack",
        "prompt": "bold",
        "prompt.topic": "bold ansiblue",
        "completion-menu.completion": "bg:#303030 #e0e0e0",
        "completion-menu.completion.current": "bg:#5f87af #ffffff",
        "completion-menu.meta.completion": "bg:#404040 #b0b0b0",
        "completion-menu.meta.completion.current": "bg:#5f87af #ffffff",
        "bottom-toolbar": "noreverse bg:#262626 #bcbcbc",
        "bottom-toolbar.key": "bg:#262626 #808080",
        "bottom-toolbar.value": "bg:#262626 #ffffff",
        "bottom-toolbar.alarm": "bg:#262626 bold #ff5f5f",
        "bottom-toolbar.state": "bg:#262626 italic #87afd7",
    })
