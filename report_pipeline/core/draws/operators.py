"""Whether a content stream's operators parse to its end, or were cut off.

Plain Python over the stream's decoded bytes, no PDF stack. MuPDF's interpreter says nothing
when a stream simply stops (operands left without their operator, an inline image or a string
that never closes): this tells. Most of a stream is matched in one regular expression, one
operation (operands, then the operator) after another; only a string with nested parentheses
and an inline image (`BI … ID <bytes> EI`, whose bytes can be anything) are followed step by
step. Tokens follow the PDF lexer (ISO 32000-1, 7.2): whitespace, comments, names, numbers,
strings, hex strings, array and dictionary delimiters, and every other run of regular
characters is an operator.
"""

from __future__ import annotations

import re

_WS = rb"\x00\t\n\x0c\r "
_DELIMITERS = rb"()<>\[\]{}/%"
_REGULAR = rb"[^" + _WS + _DELIMITERS + rb"]"
_SPACE = rb"(?:[" + _WS + rb"]++|%[^\r\n]*+)"
_OPERAND = (
    rb"(?:/" + _REGULAR + rb"*+"  # a name
    rb"|\((?:[^()\\]|\\.)*+\)"  # a string without nested parentheses
    rb"|<[0-9A-Fa-f" + _WS + rb"]*+>"  # a hex string
    rb"|<<|>>|[\[\]{}]"
    rb"|(?:[+-]?(?:\d++\.?\d*+|\.\d++)|true|false|null)(?!" + _REGULAR + rb"))"
)
_OPERATOR = rb"(?!BI(?!" + _REGULAR + rb"))" + _REGULAR + rb"++"
# whole operations, the last operator captured; then operands that no operator has taken yet
_TOKENS = rb"(?:" + _SPACE + rb"|" + _OPERAND + rb")*+"
_OPERATIONS = re.compile(rb"(?s)(?:" + _TOKENS + rb"(" + _OPERATOR + rb"))*+")
_PENDING = re.compile(rb"(?s)" + _TOKENS)
_BLANK = re.compile(rb"(?s)" + _SPACE + rb"*+")
# an indirect reference (`3 0 R`): MuPDF's dictionary parser reads it, and an inline image's
# ignores it ("Ignoring invalid inline image soft mask"), reading on to `ID`
_REFERENCE = rb"\d++[" + _WS + rb"]++\d++[" + _WS + rb"]++R(?!" + _REGULAR + rb")"
_IN_DICT = rb"(?:" + _SPACE + rb"|" + _REFERENCE + rb"|" + _OPERAND + rb")*+"
_INLINE_DICT = re.compile(rb"(?s)BI" + _IN_DICT + rb"ID[" + _WS + rb"]")
_INLINE_OPERANDS = re.compile(rb"(?s)BI" + _IN_DICT)
_KEYWORD = re.compile(_REGULAR + rb"++")
_INLINE_END = re.compile(rb"[" + _WS + rb"]EI(?![^" + _WS + _DELIMITERS + rb"])")
_STRING_PART = re.compile(rb"(?s)\\.|[()]")

# Every operator of ISO 32000-1 (Annex A): a stream whose data ends early is whole only when
# its last token is one of them, not a fragment of one (`r` of `re`).
OPERATORS = frozenset(
    b"b b* B B* BDC BI BMC BT BX c cm CS cs d d0 d1 Do DP EI EMC ET EX f F f* G g gs h i ID j J "
    b"K k l m M MP n q Q re RG rg ri s S SC sc SCN scn sh T* Tc Td TD Tf TJ Tj TL Tm Tr Ts Tw Tz "
    b"v w W W* y ' \"".split()
)


def cut_off(content: bytes, short: bool = False) -> str:
    """ "" when `content`'s operators parse to its end; else where it stops ("inside an inline
    image", "inside a string", "inside a hex string"). `short`: the stream's data is known to
    end early (its filter said so), so it must also end on a whole operator: operands left
    over ("after operands with no operator: 0 0 1") or a last operator that is none of the
    PDF's ("inside the operator r") are cut off too. Content whose data is complete may end
    with stray operands: MuPDF ignores them, and nothing after them is lost."""
    return _scan(content, short)[0]


def inline_images(content: bytes) -> int:
    """How many inline images `content` begins: `BI` operators, whole or cut off, not the
    letters inside a comment or a string (`% BI … EI`, `(BI)`), which MuPDF reads as no
    image."""
    return _scan(content, False)[1]


def inline_image_texts(content: bytes) -> list[tuple[bytes, bytes]]:
    """Each whole inline image `content` holds, in order: its dictionary's text (between `BI`
    and `ID`) and its data as it stands (between `ID` and `EI`, before any filter)."""
    spans: list[int] = []
    _scan(content, False, spans)
    texts = []
    for start in spans:
        head = _INLINE_DICT.match(content, start)
        tail = _INLINE_END.search(content, head.end()) if head else None
        if tail is not None:
            texts.append((content[start + 2 : head.end() - 3], content[head.end() : tail.start()]))
    return texts


def _scan(content: bytes, short: bool, spans: list[int] | None = None) -> tuple[str, int]:
    """(`cut_off`'s answer, the inline images begun on the way); `spans` gets where each whole
    one begins."""
    position, last, pending, begun = 0, b"", b"", 0
    while True:
        done = _OPERATIONS.match(content, position)
        if done.group(1) is not None:
            last, pending = done.group(1), b""
        position = _PENDING.match(content, done.end()).end()
        pending = (pending + content[done.end() : position])[-_SHOWN:]
        if position == len(content):
            return (_ending(pending, last) if short else ""), begun
        if content.startswith(b"(", position):
            end = _string_end(content, position)
            if not end:
                return "inside a string", begun
            pending, position = (pending + content[position:end])[-_SHOWN:], end
        elif content.startswith(b"BI", position):
            begun += 1
            end = _inline_image_end(content, position)
            if not end:
                return "inside an inline image", begun
            if spans is not None:
                spans.append(position)
            last, pending, position = b"EI", b"", end
        elif content.startswith(b"<", position) and content.find(b">", position) < 0:
            return "inside a hex string", begun
        else:
            position += 1  # a stray byte: MuPDF skips it as a syntax error


_SHOWN = 256  # operands kept to say what was left over


def _string_end(content: bytes, position: int) -> int:
    """Where the string opening at `position` ends (after its closing parenthesis); 0 when it
    never closes."""
    depth = 0
    for part in _STRING_PART.finditer(content, position):
        depth += {b"(": 1, b")": -1}.get(part.group(), 0)
        if depth == 0:
            return part.end()
    return 0


def _inline_image_end(content: bytes, position: int) -> int:
    """Where the inline image beginning at `position` (`BI`) ends, after its `EI`; 0 when its
    dictionary or its data is cut off."""
    head = _INLINE_DICT.match(content, position)
    start = head.end() if head else 0
    if head is None:  # a token in its dictionary that is no operand and not `ID` (`ID\x01`):
        stop = _INLINE_OPERANDS.match(content, position).end()  # MuPDF's "invalid key in
        keyword = _KEYWORD.match(content, stop)  # dict", a syntax error: it draws nothing of
        if keyword is None:  # the image and reads on after that token; `ID` before a
            return 0  # delimiter (`ID/`) is `ID`, its data starting at the delimiter
        if keyword.group() != b"ID":
            return keyword.end()
        start = keyword.end()
    tail = _INLINE_END.search(content, start)
    return tail.end() if tail else 0


def _ending(pending: bytes, last: bytes) -> str:
    if _BLANK.fullmatch(pending) is None:
        operands = b" ".join(pending.split())
        shown = operands[-40:].decode("latin-1")
        return f"after operands with no operator: {'…' if len(operands) > 40 else ''}{shown}"
    if last and last not in OPERATORS:
        return f"inside the operator {last[:16].decode('latin-1')}"
    return ""
