"""Count a PDF's pages from its page tree, independently of /Count.

MuPDF's page count is the root's /Count as written: a file can claim one page while its tree
holds thousands, or claim more than exist (then MuPDF raises). Intake walks /Kids from the
catalog itself, bounded in depth and visits, and compares.

A node referenced from more than one /Kids entry (invalid, but common) is read as every reader
reads it: a page each time it appears; so is a page dictionary written directly in /Kids, not
by reference (invalid too). Only a true cycle (a node that is its own ancestor), a
walk past the depth or visit limits, or a node (or catalog) MuPDF cannot parse even in a repaired
file, is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pymupdf
from pymupdf import mupdf

from report_pipeline.core.model.wording import said

MAX_DEPTH = 64  # real trees are a handful of levels deep
MAX_NODES = 100_000  # visits of pages and intermediate nodes together (shared ones each time)
_REF = re.compile(r"(\d+)\s+(\d+)\s+R")
# what MuPDF raises for an object it cannot parse, even in a repaired file, one nested past its
# parser's depth ("exception stack overflow!", a limit error) too (an allocation that failed is
# no such error: it stays `inspection_failed`)
_UNPARSED = (mupdf.FzErrorFormat, mupdf.FzErrorSyntax, mupdf.FzErrorLimit)
DIRECT_PAGE = -1  # a page dictionary written in its parent's /Kids: a leaf of no object


class BadPageTree(Exception):
    """The page tree cannot be walked: a cycle, too deep, too large, or not a tree of pages."""


class NoCatalog(BadPageTree):
    """The trailer's document catalog is not in the file: its cross-reference data is damaged
    beyond what MuPDF's repair recovers."""


@dataclass(frozen=True)
class PageTree:
    leaves: int  # pages found by walking /Kids (a shared page once per reference)
    declared: int | None  # the root's /Count as written (None: missing or not an integer)
    shared: int = 0  # distinct nodes (pages or page nodes) reached more than once


def _ref(kind: str, value: str) -> int | None:
    match = _REF.fullmatch(value.strip()) if kind == "xref" else None
    return int(match.group(1)) if match else None


def _kids(doc: pymupdf.Document, node: int) -> list[int] | None:
    """The node's /Kids as object numbers; None when it has none."""
    kind, value = doc.xref_get_key(node, "Kids")
    if kind == "xref":
        value = doc.xref_object(int(value.split()[0]), compressed=True)
    elif kind != "array":
        return None
    inner = value.strip().removeprefix("[").removesuffix("]")
    if _REF.sub("", inner).strip():
        return _direct_kids(doc, node)
    return [int(number) for number, _ in _REF.findall(inner)]


def _direct_kids(doc: pymupdf.Document, node: int) -> list[int]:
    """/Kids that hold a page dictionary itself, not a reference to one (invalid, but MuPDF
    and poppler draw such a page, and qpdf makes it indirect): each one is DIRECT_PAGE. Any
    other entry that is no reference is refused."""
    pdf = mupdf.pdf_specifics(doc.this)
    kids = mupdf.pdf_dict_get(mupdf.pdf_load_object(pdf, node), mupdf.PDF_ENUM_NAME_Kids)
    numbers = []
    for i in range(mupdf.pdf_array_len(kids)):
        kid = mupdf.pdf_array_get(kids, i)
        if mupdf.pdf_is_indirect(kid):
            numbers.append(mupdf.pdf_to_num(kid))
        elif (
            mupdf.pdf_is_dict(kid)
            and mupdf.pdf_name_eq(mupdf.pdf_dict_get(kid, mupdf.PDF_ENUM_NAME_Type),
                                  mupdf.PDF_ENUM_NAME_Page)
            and not mupdf.pdf_dict_get(kid, mupdf.PDF_ENUM_NAME_Kids).m_internal
        ):  # fmt: skip
            numbers.append(DIRECT_PAGE)
        else:
            raise BadPageTree("a /Kids entry is not a reference")
    return numbers


def _is_leaf(doc: pymupdf.Document, node: int, kids: list[int] | None) -> bool:
    kind, value = doc.xref_get_key(node, "Type")
    if value == "/Pages" or (kind == "null" and kids is not None):
        return False
    if value == "/Page" or kind == "null":
        return True
    raise BadPageTree(f"a {value} object sits in the page tree")


def _root(doc: pymupdf.Document) -> int:
    catalog = doc.pdf_catalog()
    try:
        found = 0 < catalog < doc.xref_length() and doc.xref_get_keys(catalog)
        pages = doc.xref_get_key(catalog, "Pages") if found else None
    except _UNPARSED as error:  # even repaired, MuPDF cannot parse it
        raise NoCatalog(f"the document catalog cannot be read ({said(error, 120)})") from None
    if not found:
        raise NoCatalog("the document catalog cannot be found")
    root = _ref(*pages)
    if root is None:
        raise BadPageTree("the catalog has no /Pages reference")
    return root


def _declared(doc: pymupdf.Document, root: int) -> int | None:
    kind, value = doc.xref_get_key(root, "Count")
    return int(value) if kind == "int" else None


def walk(doc: pymupdf.Document) -> PageTree:
    """Count the leaves under the catalog's /Pages, depth first, a shared node each time it is
    reached (its kids read once); refuse a node that is its own ancestor."""
    root = _root(doc)
    stack, path, known, shared = [(root, 0)], [], {}, set()
    leaves = visits = 0
    while stack:
        node, depth = stack.pop()
        if node == DIRECT_PAGE:  # a page, and no object another entry could share
            leaves += 1
            continue
        del path[depth:]  # the node's ancestors, root first
        if node in path:
            raise BadPageTree("the page tree has a cycle (a node is its own ancestor)")
        visits += 1
        if depth > MAX_DEPTH or visits > MAX_NODES:
            raise BadPageTree(
                f"the page tree is deeper than {MAX_DEPTH} or larger than {MAX_NODES} nodes"
            )
        if node in known:
            shared.add(node)
        else:
            known[node] = _children(doc, node)
        if known[node] is None:
            leaves += 1
        else:
            path.append(node)
            stack.extend((kid, depth + 1) for kid in reversed(known[node]))
    return PageTree(leaves, _declared(doc, root), len(shared))


def _children(doc: pymupdf.Document, node: int) -> list[int] | None:
    """A page node's kids, or None for a page; refuses a node missing from the file."""
    try:
        if not 0 < node < doc.xref_length() or not doc.xref_get_keys(node):
            raise BadPageTree("a page or page node is missing from the file (truncated?)")
        kids = _kids(doc, node)
        return None if _is_leaf(doc, node, kids) else (kids or [])
    except _UNPARSED as error:  # even repaired, MuPDF cannot parse it
        raise BadPageTree(f"a page or page node cannot be read ({said(error, 120)})") from None
