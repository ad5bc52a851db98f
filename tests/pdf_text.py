"""The text of a Chromium-printed PDF, page by page, with where each piece is drawn.

The test extras hold no PDF library, and the browser tests must not download one; Chromium's
printer (Skia) writes a small, regular subset of PDF, which this reads: a classic cross-reference
table, a page tree, Flate-compressed content streams, and Type0 fonts with an Identity-H
encoding, glyph widths (``/W``) and a ``/ToUnicode`` map. Content operators read: ``q``,
``Q``, ``cm``, ``BT``, ``Tf``, ``Tm``, ``Td``, ``Tj`` and ``TJ``; anything else is skipped. A
PDF outside that subset raises ``ValueError`` rather than reading as empty.

Coordinates are PDF points with the origin at the page's top left (y grows downwards), so a
run is drawn inside the page when ``0 <= x0`` and ``x1 <= width``.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from typing import Any

_OBJ = re.compile(rb"(\d+)\s+0\s+obj\s*")
_TOKEN = re.compile(
    rb"<<|>>|\[|\]|<[0-9A-Fa-f\s]*>|\((?:\\.|[^\\)])*\)|/[^\s/\[\]()<>{}%]*"
    rb"|[-+]?(?:\d+\.?\d*|\.\d+)|[A-Za-z'\"*]+"
)
Matrix = tuple[float, float, float, float, float, float]
IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


@dataclass(frozen=True)
class Run:
    """One string drawn by one ``Tj`` (or ``TJ``) operator."""

    text: str
    """The string's Unicode text (from the font's ``/ToUnicode`` map)."""
    x0: float
    """Left edge, points from the page's left edge."""
    x1: float
    """Right edge (the origin plus the glyphs' advance widths)."""
    y: float
    """Baseline, points from the page's top edge."""


@dataclass(frozen=True)
class Page:
    """One printed page: its size and every run, in drawing order."""

    width: float
    """Points."""
    height: float
    """Points."""
    runs: tuple[Run, ...]
    """In the order the content stream draws them (a table cell's text stays together)."""

    def text(self) -> str:
        """Every run's text in drawing order, without whitespace (for substring checks)."""
        return re.sub(r"\s+", "", "".join(r.text for r in self.runs))

    def lines(self, tolerance: float = 2.0) -> list[list[Run]]:
        """Runs grouped by baseline, top to bottom, each line left to right."""
        lines: list[list[Run]] = []
        for run in sorted(self.runs, key=lambda r: (r.y, r.x0)):
            if lines and abs(lines[-1][0].y - run.y) <= tolerance:
                lines[-1].append(run)
            else:
                lines.append([run])
        return [sorted(line, key=lambda r: r.x0) for line in lines]


def _multiply(m: Matrix, n: Matrix) -> Matrix:
    a, b, c, d, e, f = m
    p, q, r, s, t, u = n
    return (
        a * p + b * r,
        a * q + b * s,
        c * p + d * r,
        c * q + d * s,
        e * p + f * r + t,
        e * q + f * s + u,
    )


def _apply(m: Matrix, x: float, y: float) -> tuple[float, float]:
    return m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]


class _Reader:
    """Objects by number, parsed on demand from the cross-reference table's offsets."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        start = re.findall(rb"startxref\s+(\d+)", data)
        if not start or not data[int(start[-1]) :].startswith(b"xref"):
            raise ValueError("not a PDF with a classic cross-reference table")
        self.offsets: dict[int, int] = {}
        table = data[int(start[-1]) + 4 : data.index(b"trailer", int(start[-1]))]
        for first, count, entries in re.findall(
            rb"(\d+) (\d+)\s+((?:\d{10} \d{5} [nf]\s+)*)", table
        ):
            for k, (offset, kind) in enumerate(re.findall(rb"(\d{10}) \d{5} ([nf])", entries)):
                if kind == b"n":
                    self.offsets[int(first) + k] = int(offset)
            assert len(re.findall(rb"\d{10}", entries)) == int(count)
        self.cache: dict[int, tuple[Any, bytes | None]] = {}

    def obj(self, number: int) -> tuple[Any, bytes | None]:
        """``(value, decompressed stream or None)`` of object ``number``."""
        if number not in self.cache:
            m = _OBJ.match(self.data, self.offsets[number])
            if m is None or int(m.group(1)) != number:
                raise ValueError(f"object {number} is not at its cross-reference offset")
            tokens = _tokens(self.data, m.end())
            value = _value(tokens)
            stream = None
            rest = self.data[tokens.pos :]
            head = re.match(rb"\s*stream\r?\n", rest)
            if head is not None:
                begin = tokens.pos + head.end()
                raw = self.data[begin : begin + int(self.resolve(value["Length"]))]
                stream = zlib.decompress(raw) if value.get("Filter") == "FlateDecode" else raw
            self.cache[number] = (value, stream)
        return self.cache[number]

    def resolve(self, value: Any) -> Any:
        while isinstance(value, _Ref):
            value = self.obj(value.number)[0]
        return value

    def stream(self, value: Any) -> bytes:
        if not isinstance(value, _Ref):
            raise ValueError("a stream must be an indirect object")
        stream = self.obj(value.number)[1]
        if stream is None:
            raise ValueError(f"object {value.number} has no stream")
        return stream


@dataclass(frozen=True)
class _Ref:
    number: int


class _Tokens:
    def __init__(self, data: bytes, pos: int) -> None:
        self.data, self.pos = data, pos

    def next(self) -> bytes | None:
        m = _TOKEN.search(self.data, self.pos)
        if m is None:
            return None
        self.pos = m.end()
        return m.group(0)


def _tokens(data: bytes, pos: int) -> _Tokens:
    return _Tokens(data, pos)


def _value(tokens: _Tokens, token: bytes | None = None) -> Any:
    """One value: dictionaries, arrays, names, numbers, strings and ``n 0 R`` references."""
    token = tokens.next() if token is None else token
    if token == b"<<":
        result: dict[str, Any] = {}
        while (key := tokens.next()) != b">>":
            if key is None or not key.startswith(b"/"):
                raise ValueError(f"bad dictionary key {key!r}")
            result[key[1:].decode()] = _value(tokens)
        return result
    if token == b"[":
        items = []
        while (item := tokens.next()) != b"]":
            items.append(_value(tokens, item))
        return items
    if token is None:
        raise ValueError("unexpected end of data")
    if token.startswith(b"/"):
        return token[1:].decode()
    if re.fullmatch(rb"[-+]?(?:\d+\.?\d*|\.\d+)", token):
        save = tokens.pos
        second, third = tokens.next(), tokens.next()
        if second == b"0" and third == b"R" and token.isdigit():
            return _Ref(int(token))
        tokens.pos = save
        return float(token)
    return token


@dataclass
class _Font:
    unicode: dict[int, str]
    widths: dict[int, float]
    default_width: float

    def decode(self, codes: bytes) -> tuple[str, float]:
        """Text and advance (in thousandths of the font size) of two-byte glyph ``codes``."""
        glyphs = [int.from_bytes(codes[i : i + 2], "big") for i in range(0, len(codes) - 1, 2)]
        text = "".join(self.unicode.get(g, "\ufffd") for g in glyphs)
        return text, sum(self.widths.get(g, self.default_width) for g in glyphs)


def _font(reader: _Reader, ref: Any) -> _Font:
    font = reader.resolve(ref)
    if font.get("Subtype") != "Type0" or font.get("Encoding") != "Identity-H":
        raise ValueError(f"unsupported font {font.get('Subtype')}/{font.get('Encoding')}")
    unicode = _cmap(reader.stream(font["ToUnicode"]).decode("latin-1"))
    cid = reader.resolve(reader.resolve(font["DescendantFonts"])[0])
    widths: dict[int, float] = {}
    spec = reader.resolve(cid.get("W", []))
    i = 0
    while i < len(spec):
        first = int(spec[i])
        if isinstance(spec[i + 1], list):
            for k, w in enumerate(spec[i + 1]):
                widths[first + k] = float(w)
            i += 2
        else:
            for code in range(first, int(spec[i + 1]) + 1):
                widths[code] = float(spec[i + 2])
            i += 3
    return _Font(unicode, widths, float(cid.get("DW", 1000)))


def _cmap(text: str) -> dict[int, str]:
    def chars(hexes: str) -> str:
        raw = bytes.fromhex(hexes)
        return raw.decode("utf-16-be", errors="replace")

    result: dict[int, str] = {}
    for block in re.findall(r"beginbfchar(.*?)endbfchar", text, re.S):
        for src, dst in re.findall(r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>", block):
            result[int(src, 16)] = chars(dst)
    for block in re.findall(r"beginbfrange(.*?)endbfrange", text, re.S):
        for lo, hi, dst in re.findall(
            r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*(<[0-9A-Fa-f]+>|\[[^\]]*\])", block
        ):
            targets = re.findall(r"<([0-9A-Fa-f]+)>", dst)
            for k, code in enumerate(range(int(lo, 16), int(hi, 16) + 1)):
                if dst.startswith("["):
                    result[code] = chars(targets[k])
                else:
                    base = int(targets[0], 16) + k
                    result[code] = chr(base)
    return result


def _hex(token: bytes) -> bytes:
    return bytes.fromhex(re.sub(rb"\s", b"", token[1:-1]).decode())


class _Painter:
    """Walks one content stream, keeping the graphics and text state the runs need."""

    def __init__(self, fonts: dict[str, _Font], height: float) -> None:
        self.fonts, self.height = fonts, height
        self.ctm, self.stack = IDENTITY, list[Matrix]()
        self.tm = self.tlm = IDENTITY
        self.font: _Font | None = None
        self.size = 0.0
        self.runs: list[Run] = []

    def show(self, codes: bytes) -> None:
        if self.font is None:
            raise ValueError("text shown before a font was set")
        text, advance = self.font.decode(codes)
        width = advance / 1000 * self.size
        m = _multiply(self.tm, self.ctm)
        (x0, y0), (x1, _) = _apply(m, 0, 0), _apply(m, width, 0)
        self.runs.append(Run(text, min(x0, x1), max(x0, x1), self.height - y0))
        self.tm = _multiply((1, 0, 0, 1, width, 0), self.tm)

    def operator(self, op: bytes, args: list[Any]) -> None:
        if op == b"q":
            self.stack.append(self.ctm)
        elif op == b"Q":
            self.ctm = self.stack.pop()
        elif op == b"cm":
            self.ctm = _multiply(tuple(map(float, args[-6:])), self.ctm)  # type: ignore[arg-type]
        elif op == b"BT":
            self.tm = self.tlm = IDENTITY
        elif op == b"Tf":
            self.font, self.size = self.fonts[args[0][1:].decode()], float(args[1])
        elif op == b"Tm":
            self.tm = self.tlm = tuple(map(float, args[-6:]))  # type: ignore[assignment]
        elif op == b"Td":
            self.tm = self.tlm = _multiply((1, 0, 0, 1, float(args[0]), float(args[1])), self.tlm)
        elif op == b"Tj":
            self.show(_hex(args[-1]))
        elif op == b"TJ":
            for item in args[-1]:
                if isinstance(item, bytes):
                    self.show(_hex(item))
                else:
                    self.tm = _multiply((1, 0, 0, 1, -float(item) / 1000 * self.size, 0), self.tm)


def _paint(stream: bytes, painter: _Painter) -> None:
    tokens = _Tokens(stream, 0)
    args: list[Any] = []
    while (token := tokens.next()) is not None:
        if token == b"[":
            items: list[Any] = []
            while (item := tokens.next()) not in (b"]", None):
                items.append(
                    item
                    if item.startswith(b"<")
                    else float(item)
                    if item[:1] in b"-+.0123456789"
                    else item
                )
            args.append(items)
        elif token == b"<<":
            depth = 1
            while depth and (item := tokens.next()) is not None:
                depth += {b"<<": 1, b">>": -1}.get(item, 0)
            args.append({})
        elif token[:1] in b"/<(-+.0123456789":
            args.append(token)
        else:
            painter.operator(token, args)
            args = []


def _pages(reader: _Reader, node: Any) -> list[dict[str, Any]]:
    node = reader.resolve(node)
    if node.get("Type") == "Page":
        return [node]
    return [page for kid in reader.resolve(node["Kids"]) for page in _pages(reader, kid)]


def read_pdf(data: bytes) -> list[Page]:
    """Every page of ``data`` (a PDF Chromium printed) with its text runs."""
    reader = _Reader(data)
    trailer = data[data.rindex(b"trailer") :]
    root = _value(_Tokens(trailer, len(b"trailer")))["Root"]
    pages = []
    for node in _pages(reader, reader.resolve(root)["Pages"]):
        x0, y0, x1, y1 = (float(v) for v in reader.resolve(node["MediaBox"]))
        resources = reader.resolve(node.get("Resources", {}))
        fonts = {
            name: _font(reader, ref)
            for name, ref in reader.resolve(resources.get("Font", {})).items()
        }
        painter = _Painter(fonts, y1 - y0)
        contents = node["Contents"]
        for ref in contents if isinstance(contents, list) else [contents]:
            _paint(reader.stream(ref), painter)
        pages.append(Page(width=x1 - x0, height=y1 - y0, runs=tuple(painter.runs)))
    return pages
