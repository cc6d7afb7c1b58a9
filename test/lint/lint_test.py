#!/usr/bin/python3
# lint_test.py: shows that scripts/lint.py (make lint) passes a small clean
# tree and fails, naming each, on one deliberate violation per rule: a
# layer-breaking include, a backend header in lib/core, a docs table that
# disagrees with LAYERS, files without a purpose comment, a 71-line
# function, a 1,501-line file, an exported non-API symbol and an
# out-of-bounds write cppcheck finds. Run by make check; needs cc and
# cppcheck (make deps installs both).
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
LINT = os.path.join(REPO, "scripts", "lint.py")


def function_of(name, lines):
    """A C function whose body spans exactly `lines` lines from its opening
    brace to its closing brace; braces in a string and a comment must not
    change the count."""
    body = ['  const char *s = "}}"; /* } { */', "  int x = (int)s[0];"]
    body += ["  x += 1;"] * (lines - 5)
    body += ["  return x;"]
    return ["int %s(void) {" % name] + body + ["}", ""]


class Tree:
    """A temporary source tree: the real docs/architecture.md plus a few
    files that follow every rule."""

    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="lint_test.")
        os.makedirs(os.path.join(self.root, "docs"))
        shutil.copy(os.path.join(REPO, "docs", "architecture.md"),
                    os.path.join(self.root, "docs", "architecture.md"))
        # Shaped like the real headers: C++ guards and the export macro.
        self.write("include/tf/api.h",
                   "/* api.h: the fixture's public API, one function. */\n"
                   "#define TF_API __attribute__((visibility(\"default\")))\n"
                   "#ifdef __cplusplus\nextern \"C\" {\n#endif\n"
                   "TF_API int tf_public(void);\n"
                   "#ifdef __cplusplus\n}\n#endif\n")
        self.write("lib/core/base/base.h",
                   "/* base.h: the lowest layer of the fixture. */\n"
                   "int tf__base(void);\n")
        self.write("lib/core/graph/graph.h",
                   "/* graph.h: a graph header framework may not use. */\n")
        self.write("lib/core/framework/frame.c", "\n".join(
            ["/* frame.c: a framework file within every rule. */",
             '#include "lib/core/base/base.h"', '#include "tf/api.h"',
             "#include <stdio.h>", ""] + function_of("at_limit", 70)))
        self.write("scripts/tool.sh",
                   "#!/bin/sh\n# tool.sh: a script with its purpose comment.\n"
                   "echo ok\n")
        self.shared_library(["int tf_public(void) { return 1; }"])

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def shared_library(self, functions):
        """build/lib/libtf.so from the given C function definitions (built
        outside the linted folders)."""
        self.write("build/so.c", "\n".join(functions) + "\n")
        os.makedirs(os.path.join(self.root, "build/lib"), exist_ok=True)
        subprocess.run(["cc", "-shared", "-fPIC", "-o", "build/lib/libtf.so",
                        "build/so.c"], cwd=self.root, check=True)

    def lint(self, *rules):
        args = [sys.executable, LINT, "--root", self.root]
        for rule in rules:
            args += ["--rule", rule]
        run = subprocess.run(args, capture_output=True, text=True)
        return run.returncode, run.stdout + run.stderr

    def remove(self):
        shutil.rmtree(self.root)


class LintTest(unittest.TestCase):
    def setUp(self):
        self.tree = Tree()
        self.addCleanup(self.tree.remove)

    def assert_fails_naming(self, out, rc, *expected):
        self.assertEqual(rc, 1, out)
        for text in expected:
            self.assertIn(text, out)

    def test_clean_tree_passes_every_rule(self):
        rc, out = self.tree.lint()
        self.assertEqual(rc, 0, out)
        self.assertIn("lint: clean (layers, purpose, length, filesize, "
                      "symbols, cppcheck)", out)

    def test_each_violation_is_named(self):
        t = self.tree
        t.write("lib/core/framework/uses_graph.c",
                "/* uses_graph.c: framework reaching up into graph. */\n"
                '#include "lib/core/graph/graph.h"\n')
        t.write("lib/core/base/net.c",
                "/* net.c: lib/core reaching for the transport. */\n"
                "#include <nng/nng.h>\n")
        t.write("lib/core/base/bare.c", '#include "lib/core/base/base.h"\n')
        t.write("test/short.sh", "#!/bin/sh\n# short.sh\necho\n")
        t.write("cmd/tool/main.c", "\n".join(
            ["/* main.c: a program with one function too long. */"]
            + function_of("too_long", 71)))
        t.write("test/big.c", "/* big.c: a test file over the limit. */\n"
                + "\n" * 1500)
        t.write("lib/core/base/oob.c",
                "/* oob.c: writes past the end of an array. */\n"
                "int oob(void) {\n  int a[2];\n  a[2] = 1;\n  return a[0];\n}\n")
        t.shared_library(["int tf_public(void) { return 1; }",
                          "int tf__secret(void) { return 2; }"])
        rc, out = t.lint()
        self.assert_fails_naming(
            out, rc,
            "lib/core/framework/uses_graph.c:2: layer core/framework may not "
            "include lib/core/graph/graph.h (allowed: core/base)",
            "lib/core/base/net.c:2: layer core/base may not include "
            "<nng/nng.h>",
            "lib/core/base/bare.c:1: the file does not start with a comment",
            "test/short.sh:1: the opening comment 'short.sh' does not say",
            "cmd/tool/main.c:2: function too_long is 71 lines (max 70)",
            "test/big.c: 1501 lines (max 1500)",
            "build/lib/libtf.so: exports 1 of 2 symbols outside the public "
            "API (the tf_ names declared in include/tf/*.h); first 10: "
            "tf__secret",
            "lib/core/base/oob.c:4: cppcheck error:",
            "[arrayIndexOutOfBounds]",
            "lint: 8 problems")
        self.assertNotIn("at_limit", out)  # 70 lines is within the limit

    def test_a_rule_runs_alone(self):
        self.tree.write("lib/core/base/bare.c", "int bare;\n")
        rc, out = self.tree.lint("layers", "length")
        self.assertEqual(rc, 0, out)
        rc, out = self.tree.lint("purpose")
        self.assert_fails_naming(out, rc, "lib/core/base/bare.c:1:",
                                 "lint: 1 problems (purpose)")

    def test_docs_table_and_layers_must_agree(self):
        path = os.path.join(self.tree.root, "docs", "architecture.md")
        with open(path) as f:
            text = f.read()
        row = "| `core/base` | — |"
        self.assertIn(row, text)
        self.tree.write("docs/architecture.md",
                        text.replace(row, "| `core/base` | framework |"))
        rc, out = self.tree.lint("layers")
        self.assert_fails_naming(
            out, rc, "layer core/base: the table allows core/framework but "
            "LAYERS in scripts/lint.py allows none")

    def test_program_may_not_include_another_program(self):
        self.tree.write("cmd/one/main.c", "/* main.c: the program one. */\n"
                        '#include "cmd/common/daemon.h"\n'
                        '#include "cmd/two/helper.h"\n')
        rc, out = self.tree.lint("layers")
        self.assert_fails_naming(out, rc, "cmd/one/main.c:3: layer cmd/one "
                                 "may not include cmd/two/helper.h")
        self.assertNotIn("main.c:2", out)


if __name__ == "__main__":
    # Ends with a Check-style summary so scripts/run-tests.sh counts it.
    result = unittest.main(exit=False).result
    n, bad = result.testsRun, len(result.failures) + len(result.errors)
    print("%d%%: Checks: %d, Failures: %d, Errors: %d" % (
        100 * (n - bad) // max(n, 1), n, len(result.failures),
        len(result.errors)))
    sys.exit(0 if result.wasSuccessful() else 1)
