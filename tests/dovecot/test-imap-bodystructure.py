#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""extbody-imap-rewrite's reading of IMAP responses (RFC 3501 section 9) and
its selection by BODYSTRUCTURE: literals, NIL, nested message/rfc822, odd
case, RFC 2231 parameters as Dovecot 2.3 and 2.4 show them (continuations
joined by both: URL*0/URL*1 come as URL; a charset-encoded one stays URL* or
access-type* in 2.3, and comes decoded, as URL or access-type, in 2.4), and
structures it cannot read (then the message is fetched: a false positive
costs a fetch, a false negative a resolution).

    python3 test-imap-bodystructure.py [PATH-OF-extbody-imap-rewrite]
"""
import importlib.machinery
import importlib.util
import os
import sys
import unittest

TOOL = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "filters", "dovecot", "extbody-imap-rewrite")
_loader = importlib.machinery.SourceFileLoader("imap_rewrite", TOOL)
_spec = importlib.util.spec_from_loader("imap_rewrite", _loader)
t = importlib.util.module_from_spec(_spec)
_loader.exec_module(t)


def bs(text):
    """The BODYSTRUCTURE of a FETCH response written as Dovecot writes it."""
    d = t.parse_fetch(b"(UID 1 BODYSTRUCTURE " + text + b")", 0)
    return d["BODYSTRUCTURE"]


TEXT = b'("text" "plain" ("charset" "us-ascii") NIL NIL "7bit" 2 0 NIL NIL NIL NIL)'
EXT_URL = b'("message" "external-body" ("access-type" "URL" "URL" "data:,y") NIL NIL "7bit" 26 NIL NIL NIL NIL)'
EXT_FTP = b'("message" "external-body" ("access-type" "mail-server" "server" "a@b") NIL NIL "7bit" 26 NIL NIL NIL NIL)'
ENVELOPE = b'(NIL "inner" NIL NIL NIL NIL NIL NIL NIL NIL)'


def rfc822(body):
    return b'("message" "rfc822" NIL NIL NIL "7bit" 233 ' + ENVELOPE + b" " + body + b" 14 NIL NIL NIL NIL)"


def multi(sub, *parts):
    return b"(" + b"".join(parts) + b' "' + sub + b'" ("boundary" "b") NIL NIL NIL)'


class Syntax(unittest.TestCase):
    def test_values(self):
        v, i = t.parse_value(b'(a "b c" NIL {3}\r\nx)y () "q\\"\\\\")', 0)
        self.assertEqual(v, [b"a", b"b c", None, b"x)y", [], b'q"\\'])
        self.assertIsInstance(v[0], t.Atom)
        self.assertNotIsInstance(v[1], t.Atom)

    def test_literal_plus_and_literal8(self):
        self.assertEqual(t.parse_value(b"{2+}\r\nab", 0)[0], b"ab")
        self.assertEqual(t.parse_value(b"~{2}\r\nab", 0)[0], b"ab")

    def test_nil_any_case(self):
        self.assertIsNone(t.parse_value(b"nil", 0)[0])
        self.assertIsNone(t.parse_value(b"Nil)", 0)[0])

    def test_section_atoms(self):
        d = t.parse_fetch(b'(UID 7 BODY[HEADER.FIELDS (SUBJECT DATE)] {4}\r\nab\r\n BODY[]<0> "x")', 0)
        self.assertEqual(d["BODY[HEADER.FIELDS (SUBJECT DATE)]"], b"ab\r\n")
        self.assertEqual(d["BODY[]<0>"], b"x")
        self.assertEqual(d["UID"], b"7")

    def test_flags(self):
        d = t.parse_fetch(b"(FLAGS (\\Seen $Label1 \\Recent) UID 3)", 0)
        self.assertEqual(t.flag_list(d["FLAGS"]), ["\\Seen", "$Label1", "\\Recent"])

    def test_raw_items(self):
        text = (b'(UID 4 FLAGS (\\Seen) BODYSTRUCTURE (("text" "plain" ("name" "a)\\"(b") NIL NIL "7bit" 2 0)'
                b'({13}\r\nexternal-body) "mixed") RFC822.SIZE 12)')
        d = t.parse_fetch(text, 0, raw=("BODYSTRUCTURE",))
        self.assertEqual(d["UID"], b"4")
        self.assertEqual(d["RFC822.SIZE"], b"12")
        self.assertIsInstance(d["BODYSTRUCTURE"], t.Raw)
        self.assertEqual(t.parse_value(d["BODYSTRUCTURE"], 0)[0], t.parse_fetch(text, 0)["BODYSTRUCTURE"])
        # taken as the last item: the rest of the list, a superset, and the
        # items after it not read
        d = t.parse_fetch(text + b"\r\n", 0, raw=("BODYSTRUCTURE",), rest=True)
        self.assertNotIn("RFC822.SIZE", d)
        self.assertTrue(d["BODYSTRUCTURE"].endswith(b"RFC822.SIZE 12"))
        # a raw structure without the word is not parsed (and not selected);
        # with it, it is parsed
        self.assertFalse(t.structure_selects(t.Raw(TEXT)))
        self.assertTrue(t.structure_selects(t.Raw(EXT_URL)))
        self.assertTrue(t.structure_selects(t.Raw(EXT_URL.upper())))
        self.assertFalse(t.structure_selects(t.Raw(EXT_FTP)))
        self.assertTrue(t.structure_selects(t.Raw(b'("message" "external-body" ')))   # cut: cannot read
        self.assertEqual(t.skip_value(b'  ("a" {3}\r\n)"( ~{1}\r\n( (x)) y', 0), len(b'  ("a" {3}\r\n)"( ~{1}\r\n( (x))'))

    def test_errors(self):
        for bad in (b"(a", b'"abc', b"{5}\r\nab", b")", b"", b"{x}\r\n"):
            with self.assertRaises(t.ParseError, msg=bad):
                t.parse_value(bad, 0)


class Reader(unittest.TestCase):
    """The client's reading of whole responses, from a byte stream."""

    def client(self, data):
        import io
        got = []
        c = t.Imap(io.BufferedReader(io.BytesIO(b"* PREAUTH [CAPABILITY IMAP4rev1 LITERAL+ UIDPLUS] hi\r\n" + data)),
                   io.BytesIO(), lambda: None)
        c.on_fetch = got.append
        return c, got

    def test_selection_fast_path_and_fallback(self):
        c, got = self.client(
            b"* 1 FETCH (UID 7 FLAGS (\\Seen $X) BODYSTRUCTURE " + EXT_URL + b")\r\n"
            b"* 2 FETCH (UID 8 FLAGS () BODYSTRUCTURE (" + TEXT[1:-1] + b" {3}\r\n)x( NIL))\r\n"
            b"* 3 FETCH (FLAGS (\\Deleted) UID 9 BODYSTRUCTURE " + TEXT + b")\r\n"
            b"* 4 EXPUNGE\r\nX1 OK done\r\n")
        self.assertIn("UIDPLUS", c.caps)
        self.assertIn("LITERAL+", c.caps)
        for _ in range(5):
            c.read_response()
        self.assertEqual(c.done["X1"][0], "OK")
        self.assertEqual([int(d["UID"]) for d in got], [7, 8, 9])
        self.assertEqual(t.flag_list(got[0]["FLAGS"]), ["\\Seen", "$X"])
        self.assertTrue(t.structure_selects(got[0]["BODYSTRUCTURE"]))
        self.assertFalse(t.structure_selects(got[1]["BODYSTRUCTURE"]))
        self.assertEqual(t.flag_list(got[2]["FLAGS"]), ["\\Deleted"])
        self.assertFalse(t.structure_selects(got[2]["BODYSTRUCTURE"]))

    def test_uid_sets(self):
        self.assertEqual(t.uid_set([5, 1, 2, 3, 9, 10]), b"1:3,5,9:10")
        self.assertEqual(t.uid_set([4]), b"4")
        self.assertEqual(t.parse_uid_set(b"45:47,50"), [45, 46, 47, 50])
        self.assertEqual(t.parse_uid_set(b"3:1"), [3, 2, 1])


class Selection(unittest.TestCase):
    def sel(self, text):
        return t.structure_selects(bs(text))

    def test_top_level(self):
        self.assertTrue(self.sel(EXT_URL))

    def test_none(self):
        self.assertFalse(self.sel(TEXT))
        self.assertFalse(self.sel(multi(b"mixed", TEXT, TEXT)))
        self.assertFalse(self.sel(rfc822(TEXT)))

    def test_in_alternative_and_nested(self):
        self.assertTrue(self.sel(multi(b"alternative", TEXT, EXT_URL)))
        self.assertTrue(self.sel(multi(b"mixed", TEXT, multi(b"related", multi(b"alternative", TEXT, EXT_URL)))))

    def test_in_forwarded_message(self):
        # Dovecot's own answer for a multipart/mixed holding a message/rfc822
        # whose body is a multipart/alternative with the reference
        d = t.parse_fetch(b'(UID 4 BODYSTRUCTURE (("text" "plain" ("charset" "us-ascii") NIL NIL "7bit" 2 0 NIL NIL NIL NIL)'
                          b'("message" "rfc822" NIL NIL NIL "7bit" 233 (NIL "inner" NIL NIL NIL NIL NIL NIL NIL NIL) '
                          b'(("text" "plain" ("charset" "us-ascii") NIL NIL "7bit" 1 0 NIL NIL NIL NIL)'
                          b'("message" "external-body" ("access-type" "URL" "URL" "data:,y") NIL NIL "7bit" 26 NIL NIL NIL NIL) '
                          b'"alternative" ("boundary" "c") NIL NIL NIL) 14 NIL NIL NIL NIL) "mixed" ("boundary" "b") NIL NIL NIL))', 0)
        self.assertTrue(t.structure_selects(d["BODYSTRUCTURE"]))
        self.assertTrue(self.sel(rfc822(rfc822(multi(b"mixed", TEXT, EXT_URL)))))
        self.assertFalse(self.sel(rfc822(rfc822(multi(b"mixed", TEXT, TEXT)))))

    def test_odd_case(self):
        self.assertTrue(self.sel(b'("MESSAGE" "External-Body" ("ACCESS-TYPE" "url" "url" "x") NIL NIL "7bit" 2 NIL NIL NIL NIL)'))
        self.assertTrue(self.sel(b'("message" "external-body" ("Access-Type" " Url " "URL" "x") NIL NIL "7bit" 2)'))

    def test_access_types(self):
        self.assertFalse(self.sel(EXT_FTP))
        for at in (b"anon-ftp", b"local-file", b"URL", b"ANON-FTP"):
            self.assertTrue(self.sel(b'("message" "external-body" ("access-type" "' + at + b'") NIL NIL "7bit" 2 NIL NIL NIL NIL)'))
        for at in (b"ftp", b"tftp", b"afs", b"mail-server", b"content-id"):
            self.assertFalse(self.sel(b'("message" "external-body" ("access-type" "' + at + b'") NIL NIL "7bit" 2 NIL NIL NIL NIL)'))

    def test_uncertain_is_fetched(self):
        uncertain = [
            b'("message" "external-body" NIL NIL NIL "7bit" 2 NIL NIL NIL NIL)',                       # no parameters
            b'("message" "external-body" ("URL" "data:,x") NIL NIL "7bit" 2 NIL NIL NIL NIL)',          # no access-type
            # RFC 2231 with a charset: Dovecot 2.3 shows the encoded value under access-type*
            b'("message" "external-body" ("URL*" "us-ascii\'\'data" "access-type*" "us-ascii\'en\'URL") NIL NIL "7bit" 28 NIL NIL NIL NIL)',
            b'("message" "external-body" ("access-type" "mail-server" "access-type" "url") NIL NIL "7bit" 2)',  # twice
            b'("message" "external-body" ("access-type" "=?us-ascii?q?url?=") NIL NIL "7bit" 2)',         # not a token
            b'("message" "external-body" ("access-type" NIL) NIL NIL "7bit" 2)',
            b'("message" "external-body" ("access-type") NIL NIL "7bit" 2)',                            # odd list
            b'("message" "external-body")',                                                             # too short
            b'(NIL "external-body" NIL NIL NIL "7bit" 2)',
            b'()',
        ]
        for text in uncertain:
            self.assertTrue(self.sel(text), text)
        # a structure it cannot read inside a multipart: fetched too
        self.assertTrue(self.sel(multi(b"mixed", TEXT, b'("message" "external-body")')))
        self.assertTrue(t.structure_selects(None))
        self.assertTrue(t.structure_selects(b"x"))

    def test_rfc2231_joined(self):
        # URL*0/URL*1 continuations: Dovecot joins them
        self.assertTrue(self.sel(b'("message" "external-body" ("access-type" "URL" "URL" '
                                 b'"http://www.example.com/a/very/long/path/file.pdf") NIL NIL "7bit" 33 NIL NIL NIL NIL)'))

    def test_rfc2231_decoded(self):
        # access-type*=us-ascii'en'URL; URL*=us-ascii''data%3A...: Dovecot
        # 2.4.1's answer, the charset-encoded values decoded (2.3.19 leaves
        # them encoded under access-type* and URL*: test_uncertain_is_fetched)
        self.assertTrue(self.sel(b'("message" "external-body" ("access-type" "URL" "URL" "data:") '
                                 b'NIL NIL "7bit" 28 NIL NIL NIL NIL)'))
        # decoded as another access-type: left alone, as extbody leaves it
        self.assertFalse(self.sel(b'("message" "external-body" ("access-type" "mail-server" "server" "a@b") '
                                  b'NIL NIL "7bit" 28 NIL NIL NIL NIL)'))

    def test_literal_parameter(self):
        # a value Dovecot cannot quote comes as a literal
        d = t.parse_fetch(b'(UID 9 BODYSTRUCTURE ("message" "external-body" ("access-type" {3}\r\nURL "url" {4}\r\nx"y\\'
                          b') NIL NIL "7bit" 2 NIL NIL NIL NIL))', 0)
        self.assertTrue(t.structure_selects(d["BODYSTRUCTURE"]))
        d = t.parse_fetch(b'(UID 9 BODYSTRUCTURE ("message" "external-body" ({11}\r\naccess-type "ftp") NIL NIL "7bit" 2))', 0)
        self.assertFalse(t.structure_selects(d["BODYSTRUCTURE"]))

    def test_deep(self):
        deep = EXT_URL
        for _ in range(150):
            deep = multi(b"mixed", deep)
        self.assertTrue(self.sel(deep))
        deep = TEXT
        for _ in range(300):
            deep = multi(b"mixed", deep)
        self.assertTrue(self.sel(deep))       # beyond what it reads: fetched


class Sockets(unittest.TestCase):
    def test_forms(self):
        self.assertEqual(t.parse_socket("unix:/run/extbody/http.sock"), ("unix", "/run/extbody/http.sock"))
        self.assertEqual(t.parse_socket("/tmp/s"), ("unix", "/tmp/s"))
        self.assertEqual(t.parse_socket("inet:8025"), ("inet", ("127.0.0.1", 8025)))
        self.assertEqual(t.parse_socket("inet:8025@127.0.0.2"), ("inet", ("127.0.0.2", 8025)))
        self.assertEqual(t.parse_socket("inet6:8025@[::1]"), ("inet", ("::1", 8025)))
        self.assertIsNone(t.parse_socket("bogus"))


if __name__ == "__main__":
    sys.setrecursionlimit(5000)
    unittest.main()
