"""``decode_source`` answers without tokenize where no cookie can be, as tokenize would.

``files/_reading.py`` says UTF-8 for bytes with no BOM and no ``coding`` in their
first two lines, without importing tokenize (start-up). The oracle is
:func:`tokenize.detect_encoding` itself, asked of every generated text, with the
same reading of its errors as the module's docstring gives (a first line that is
not UTF-8 means UTF-8, then a decoding error).
"""

from __future__ import annotations

import io
import subprocess
import sys
import tokenize

from hypothesis import example, given, settings
from hypothesis import strategies as st

from torchport.check.files._reading import SourceError, decode_source

# pieces of a line that make and break cookies, blank and comment lines and UTF-8
_PIECES = (
    b"#", b" ", b"\t", b"\f", b"coding", b":", b"=", b"utf-8", b"latin-1", b"ascii", b"-*-",
    b"bogus-codec", b"x = 1", b"\xef\xbb\xbf", b"\xe9", b"\xc3\xa9", b"\xff", b"\r",
    b"vim: set fileencoding", b"print('\xc3\xa9')",
)  # fmt: skip
_LINE = st.lists(st.sampled_from(_PIECES), max_size=6).map(b"".join)
_TEXTS = st.builds(
    lambda bom, lines, end: bom + end.join(lines),
    st.sampled_from([b"", b"\xef\xbb\xbf"]),
    st.lists(_LINE, max_size=4),
    st.sampled_from([b"\n", b"\r\n"]),
)


def _oracle(data: bytes) -> tuple[str, str] | str:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if "invalid or missing encoding declaration" not in str(exc.msg):
            return "bad declaration"
        encoding = "utf-8"
    try:
        return data.decode(encoding), encoding
    except (UnicodeDecodeError, LookupError):
        return "undecodable"


def _ours(data: bytes) -> tuple[str, str] | str:
    try:
        return decode_source(data)
    except SourceError as exc:
        return "bad declaration" if "bad encoding declaration" in str(exc) else "undecodable"


@settings(max_examples=300)
@given(_TEXTS)
@example(b"\xef\xbb\xbfx = 1\n")  # a BOM, no cookie: utf-8-sig
@example(b"#\n# coding: latin-1\n\xe9\n")  # the cookie on the second line
@example(b"\n# coding: latin-1\n\xe9\n")
@example(b"x = 1\n# coding: latin-1\n\xe9\n")  # too late: UTF-8, undecodable
def test_decode_source_agrees_with_tokenize(data: bytes) -> None:
    assert _ours(data) == _oracle(data), data


def test_a_plain_file_is_decoded_without_tokenize() -> None:
    probe = (
        "import sys\n"
        "from torchport.check.files._reading import decode_source\n"
        "assert decode_source(b'import torch\\nx = 1\\n') == ('import torch\\nx = 1\\n', 'utf-8')\n"
        "print('tokenize' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    cookie = "# -*- coding: latin-1 -*-\nx = '\xe9'\n"
    assert decode_source(cookie.encode("latin-1")) == (cookie, "iso-8859-1")
