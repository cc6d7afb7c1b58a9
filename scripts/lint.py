#!/usr/bin/python3
# lint.py: the project's lint, run by `make lint` (and .ci/run). Six rules,
# each runnable alone with --rule NAME:
#   layers    #include "lib/..." / "cmd/..." lines follow the layer table of
#             docs/architecture.md (LAYERS below; the two must agree), and
#             lib/core and lib/rendezvous include no transport or backend
#   purpose   every source file opens with a comment saying what it is for
#   length    functions in lib/ and cmd/ are at most 70 lines, counted from
#             the line of the opening brace to that of the closing brace
#   filesize  files in lib/, cmd/ and test/ are at most 1,500 lines
#   symbols   libtf.so exports only the tf_ names declared in include/tf/
#   cppcheck  cppcheck finds nothing (scripts/cppcheck.supp: suppressions)
# Standard library only. Prints one "file:line: message" per problem and
# exits 1 when there is any, 0 when the tree is clean.
import argparse
import os
import re
import subprocess
import sys
import time

MAX_FUNCTION_LINES = 70
MAX_FILE_LINES = 1500
MIN_PURPOSE_WORDS = 4
SOURCE_EXTS = (".c", ".h", ".cc", ".cu", ".py", ".sh")
C_EXTS = (".c", ".h", ".cc", ".cu")
PURPOSE_DIRS = ("lib", "cmd", "include", "test", "bench", "tools",
                "examples", "scripts")
FILESIZE_DIRS = ("lib", "cmd", "test")
DOCS_TABLE = "docs/architecture.md"

CORE = ["core/base", "core/framework", "core/ops", "core/graph",
        "core/grad", "core/serialize", "core/exec", "core/cc"]
# Which layer may include which (besides itself and include/tf/): the table
# under "## Layers" in docs/architecture.md, spelled out. "cmd/<program>" is
# each of cmd/tfctl, cmd/tfmaster, ...; one program may not include another.
LAYERS = {
    "core/base": [],
    "core/framework": ["core/base"],
    "core/ops": ["core/framework", "core/base"],
    "core/graph": ["core/framework", "core/base"],
    "core/grad": ["core/graph", "core/ops", "core/framework", "core/base"],
    "core/serialize": ["core/framework", "core/base"],
    "core/exec": ["core/graph", "core/serialize", "core/framework",
                  "core/base"],
    "core/cc": ["core/exec", "core/graph", "core/serialize", "core/ops",
                "core/framework", "core/base"],
    "devices": ["core/ops", "core/serialize", "core/framework", "core/base"],
    "rendezvous": ["core/framework", "core/base"],
    "transport": ["core/serialize", "core/framework", "core/base"],
    "runtime": ["transport", "rendezvous"] + CORE,
    "cmd/common": ["runtime", "transport", "rendezvous"] + CORE,
    "cmd/<program>": ["cmd/common", "runtime", "transport",
                      "rendezvous"] + CORE,
}
# lib/core and lib/rendezvous know no transport, device backend, CUDA or
# ibverbs: system headers they may not include.
BACKEND_HEADER = re.compile(
    r"^\s*#\s*include\s*<((?:nng|infiniband|rdma)/[^>]*|uv\.h|"
    r"(?:cuda|cublas|cudnn|curand|nccl)[^>]*)>")
BACKEND_FREE = ("lib/core/", "lib/rendezvous/")
QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
# Symbols the linker itself defines in every shared object.
TOOLCHAIN_SYMBOLS = {"_init", "_fini", "_edata", "_end", "__bss_start"}


class Lint:
    """Collects problems as "where: message" lines."""

    def __init__(self, root):
        self.root = root
        self.problems = []

    def report(self, where, message):
        self.problems.append("%s: %s" % (where, message))

    def read(self, rel):
        with open(os.path.join(self.root, rel), encoding="utf-8",
                  errors="replace") as f:
            return f.read()

    def files(self, dirs, exts):
        """Files under the top-level dirs ending in exts, sorted, relative
        to the root with '/' separators."""
        found = []
        for top in dirs:
            for base, subdirs, names in os.walk(os.path.join(self.root, top)):
                subdirs.sort()
                for name in sorted(names):
                    if name.endswith(exts):
                        path = os.path.join(base, name)
                        found.append(os.path.relpath(path, self.root)
                                     .replace(os.sep, "/"))
        return found


# ---- C text: comments, literals and preprocessor lines blanked ----------

# A comment, or a string or character literal (one that ends at a newline
# unterminated included, so an apostrophe in #error text stays local).
C_NOISE = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)"
                     r"|\"(?:\\.|[^\"\\\n])*\"?|'(?:\\.|[^'\\\n])*'?", re.S)


def strip_c(text):
    """Returns text with comments and the contents of string and character
    literals replaced by spaces (the quotes stay); newlines stay too, so
    offsets and line numbers are those of the original."""
    def blank(match):
        s = match.group(0)
        blanked = re.sub(r"[^\n]", " ", s)
        if s[0] in "\"'":
            closed = len(s) > 1 and s[-1] == s[0]
            blanked = s[0] + blanked[1:len(s) - closed] + s[-1] * closed
        return blanked
    return C_NOISE.sub(blank, text)


def blank_preprocessor(text):
    """Blanks preprocessor directives (and their continuation lines) in
    stripped text, so braces in macros do not count as code."""
    lines = text.split("\n")
    continued = False
    for k, line in enumerate(lines):
        if continued or line.lstrip().startswith("#"):
            continued = line.rstrip().endswith("\\")
            lines[k] = " " * len(line)
    return "\n".join(lines)


def c_code(text):
    return blank_preprocessor(strip_c(text))


# ---- rule: layers -------------------------------------------------------

def layer_of(path):
    """The layer of a path under lib/ or cmd/ (a file or an include), or
    None when the path is in no layer."""
    parts = path.split("/")
    if len(parts) < 3:
        return None
    if parts[0] == "lib" and parts[1] == "core" and len(parts) >= 4:
        layer = "core/" + parts[2]
        return layer if layer in LAYERS else None
    if parts[0] == "lib" and parts[1] in LAYERS:
        return parts[1]
    if parts[0] == "cmd":
        return "cmd/" + parts[1]
    return None


def table_key(layer):
    """The LAYERS row of a layer: each cmd program shares one."""
    if layer.startswith("cmd/") and layer != "cmd/common":
        return "cmd/<program>"
    return layer


def check_layers(lint):
    check_docs_table(lint)
    for path in lint.files(("lib", "cmd"), C_EXTS):
        layer = layer_of(path)
        if layer is None:
            lint.report(path, "file is in no layer of LAYERS (see %s)"
                        % DOCS_TABLE)
            continue
        for number, line in enumerate(lint.read(path).split("\n"), 1):
            check_include(lint, path, number, layer, line)


def check_include(lint, path, number, layer, line):
    where = "%s:%d" % (path, number)
    backend = BACKEND_HEADER.match(line)
    if backend and path.startswith(BACKEND_FREE):
        lint.report(where, "layer %s may not include <%s> (lib/core and "
                    "lib/rendezvous use no transport or device backend)"
                    % (layer, backend.group(1)))
    quoted = QUOTED_INCLUDE.match(line)
    if not quoted:
        return
    target = quoted.group(1)
    if target.startswith("tf/"):
        return
    if not target.startswith(("lib/", "cmd/")):
        lint.report(where, 'include "%s": name it from the root '
                    '("lib/...", "cmd/...") or as "tf/..."' % target)
        return
    other = layer_of(target)
    allowed = LAYERS[table_key(layer)]
    if other is None:
        lint.report(where, 'include "%s" is in no layer' % target)
    elif other != layer and other not in allowed:
        lint.report(where, "layer %s may not include %s (allowed: %s)"
                    % (layer, target, ", ".join(allowed) or "none"))


def check_docs_table(lint):
    """The docs table and LAYERS must say the same."""
    try:
        rows = parse_docs_table(lint.read(DOCS_TABLE))
    except OSError as e:
        lint.report(DOCS_TABLE, "cannot read the layer table: %s" % e)
        return
    for key in sorted(set(rows) | set(LAYERS)):
        if key not in rows:
            lint.report(DOCS_TABLE, "the layer table has no row for %s, "
                        "which LAYERS in scripts/lint.py has" % key)
            continue
        number, names = rows[key]
        where = "%s:%d" % (DOCS_TABLE, number)
        if key not in LAYERS:
            lint.report(where, "layer %s is not in LAYERS in "
                        "scripts/lint.py" % key)
            continue
        docs = expand_docs_names(lint, where, key, names, rows)
        if docs != set(LAYERS[key]):
            lint.report(where, "layer %s: the table allows %s but LAYERS in "
                        "scripts/lint.py allows %s" % (
                            key, ", ".join(sorted(docs)) or "none",
                            ", ".join(sorted(LAYERS[key])) or "none"))


def parse_docs_table(text):
    """{layer: (line number, [names as written])} from the markdown table
    under "## Layers"."""
    rows, in_section = {}, False
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("## "):
            in_section = line.strip() == "## Layers"
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not in_section or not line.startswith("|") or len(cells) != 2:
            continue
        key = cells[0].replace("`", "")
        if key == "layer" or set(key) <= set("-: "):
            continue
        names = [n.replace("`", "").strip() for n in cells[1].split(",")]
        rows[key] = (number, [n for n in names if n not in ("", "—", "-")])
    return rows


def expand_docs_names(lint, where, key, names, rows, depth=0):
    """The set of layers a docs cell names: "framework" in a core row is
    core/framework, "every core layer" is all of lib/core, and "X and
    everything X may include" is X plus X's row."""
    found = set()
    for name in names:
        ref = re.fullmatch(r"(\S+) and everything (\S+) may include", name)
        if name == "every core layer":
            found.update(CORE)
        elif ref and ref.group(2) in rows and depth < 4:
            found.add(ref.group(1))
            found |= expand_docs_names(lint, where, ref.group(2),
                                       rows[ref.group(2)][1], rows, depth + 1)
        elif name in LAYERS:
            found.add(name)
        elif "core/" + name in CORE:
            found.add("core/" + name)
        else:
            lint.report(where, "layer %s: the table names %r, which is no "
                        "layer" % (key, name))
    return found


# ---- rule: purpose ------------------------------------------------------

def check_purpose(lint):
    for path in lint.files(PURPOSE_DIRS, SOURCE_EXTS):
        comment = opening_comment(lint.read(path), path.endswith(C_EXTS))
        if comment is None:
            lint.report(path + ":1", "the file does not start with a comment "
                        "saying what it is for")
            continue
        words = re.findall(r"[\w.+-]+", comment)
        licence = re.match(r"\s*(copyright|spdx)", comment, re.IGNORECASE)
        if len(words) < MIN_PURPOSE_WORDS or licence:
            lint.report(path + ":1", "the opening comment %r does not say "
                        "what the file is for (%d words or more)"
                        % (comment.strip()[:60], MIN_PURPOSE_WORDS))


def opening_comment(text, is_c):
    """The text of the comment the file opens with (after a shebang and
    blank lines), or None when it opens with something else."""
    lines = text.split("\n")
    if lines and lines[0].startswith("#!"):
        lines = lines[1:]
    while lines and not lines[0].strip():
        lines = lines[1:]
    if not lines:
        return None
    rest = "\n".join(lines)
    if is_c and rest.startswith("/*"):
        end = rest.find("*/")
        return rest[2:end] if end >= 0 else None
    marker = "//" if is_c else "#"
    block = []
    for line in lines:
        if not line.startswith(marker) or line.startswith("#!"):
            break
        block.append(line[len(marker):])
    if block:
        return "\n".join(block)
    docstring = re.match(r'(?:"""|\'\'\')(.*?)(?:"""|\'\'\')', rest, re.S)
    return docstring.group(1) if docstring and not is_c else None


# ---- rule: length -------------------------------------------------------

def functions(code):
    """(name, line of the name, lines) for each function definition in
    stripped code: a '{' at file scope whose preceding token is ')'. Its
    length counts the lines from the opening brace to the closing brace,
    both included (the signature lines above the brace are not counted)."""
    found, depth, start = [], 0, 0
    for brace in re.finditer(r"[{}]", code):
        i, c = brace.start(), brace.group(0)
        if c == "{":
            if depth == 0:
                start = i
            depth += 1
        elif c == "}" and depth > 0:
            depth -= 1
            if depth == 0 and last_char(code, start) == ")":
                name, at = function_name(code, start)
                lines = code.count("\n", start, i) + 1
                found.append((name, code.count("\n", 0, at) + 1, lines))
    return found


def last_nonspace(code, end):
    """The offset of the last non-space character before end, or -1."""
    i = end - 1
    while i >= 0 and code[i].isspace():
        i -= 1
    return i


def last_char(code, end):
    """The last non-space character before offset end ("" if none)."""
    i = last_nonspace(code, end)
    return code[i] if i >= 0 else ""


def word_before(code, end):
    """The identifier just before offset end (spaces skipped) and its
    offset; "" when there is none."""
    stop = end
    while stop > 0 and code[stop - 1].isspace():
        stop -= 1
    start = stop
    while start > 0 and (code[start - 1].isalnum() or code[start - 1] == "_"):
        start -= 1
    return code[start:stop], start


def function_name(code, brace):
    """The identifier before the parameter list that ends before brace
    (skipping __attribute__((...)) after it), and its offset."""
    close = last_nonspace(code, brace)
    while True:
        name, at = word_before(code, matching_paren(code, close))
        if name not in ("__attribute__", "__declspec") or \
                last_char(code, at) != ")":
            return name or "?", at
        close = last_nonspace(code, at)


def matching_paren(code, close):
    """Offset of the '(' that matches the ')' at close."""
    depth = 0
    for i in range(close, -1, -1):
        if code[i] == ")":
            depth += 1
        elif code[i] == "(":
            depth -= 1
            if depth == 0:
                return i
    return 0


def check_length(lint):
    for path in lint.files(("lib", "cmd"), C_EXTS):
        for name, line, lines in functions(c_code(lint.read(path))):
            if lines > MAX_FUNCTION_LINES:
                lint.report("%s:%d" % (path, line), "function %s is %d lines "
                            "(max %d)" % (name, lines, MAX_FUNCTION_LINES))


# ---- rule: filesize -----------------------------------------------------

def check_filesize(lint):
    for path in lint.files(FILESIZE_DIRS, SOURCE_EXTS):
        lines = lint.read(path).count("\n")
        if lines > MAX_FILE_LINES:
            lint.report(path, "%d lines (max %d): split the file"
                        % (lines, MAX_FILE_LINES))


# ---- rule: symbols ------------------------------------------------------

def check_symbols(lint, library):
    """library: its path relative to the root."""
    shown, library = library, os.path.join(lint.root, library)
    if not os.path.exists(library):
        lint.report(shown, "not found: build it first (make lint does)")
        return
    nm = subprocess.run(["nm", "-D", "--defined-only", library],
                        capture_output=True, text=True)
    if nm.returncode != 0:
        lint.report(shown, "nm failed: " + nm.stderr.strip())
        return
    api = public_api(lint)
    exported = set()
    for line in nm.stdout.split("\n"):
        fields = line.split()
        if len(fields) == 3:
            exported.add(fields[2].split("@")[0])
    outside = sorted(exported - api - TOOLCHAIN_SYMBOLS)
    if outside:
        lint.report(shown, "exports %d of %d symbols outside the public "
                    "API (the tf_ names declared in include/tf/*.h); first "
                    "10: %s" % (len(outside), len(exported),
                                " ".join(outside[:10])))


def public_api(lint):
    """The tf_ names include/tf/*.h declare: functions (an identifier
    followed by '(' at file scope) and extern variables."""
    names = set()
    for path in lint.files(("include/tf",), (".h",)):
        # extern "C" { ... } (the C++ guards) is file scope too.
        code = re.sub(r'\bextern\s*"\s*"\s*\{', " ", c_code(lint.read(path)))
        depth, top = 0, []
        for c in code:  # keep file scope only: no struct or inline bodies
            depth = max(0, depth + (c == "{") - (c == "}"))
            top.append(c if depth == 0 and c != "}" else " ")
        top = "".join(top)
        names.update(re.findall(r"\b(tf_\w+)\s*\(", top))
        names.update(re.findall(r"\bextern\b[^;(]*?\b(tf_\w+)\s*(?:\[[^]]*\]"
                                r"\s*)?;", top))
    return names


# ---- rule: cppcheck -----------------------------------------------------

def check_cppcheck(lint, jobs):
    # The configuration the build uses (-D as in the Makefile's CFLAGS);
    # cppcheck 2.10 does not know C11's _Noreturn (tf__panic's), only the
    # GNU attribute, so without the define every TF_ASSERT looks survivable.
    command = ["cppcheck", "--quiet", "--error-exitcode=1",
               "--enable=warning,portability,performance", "--inline-suppr",
               "-j%d" % jobs, "--std=c11", "-D_GNU_SOURCE", "-DTF_HAVE_DNNL",
               "-DTF_HAVE_SYSTEMD", "-D_Noreturn=__attribute__((noreturn))",
               "-I", "include", "-I", ".",
               "--template={file}:{line}: cppcheck {severity}: {message} "
               "[{id}]"]
    if os.path.exists(os.path.join(lint.root, "scripts/cppcheck.supp")):
        command.append("--suppressions-list=scripts/cppcheck.supp")
    command += [d for d in ("lib", "cmd")
                if os.path.isdir(os.path.join(lint.root, d))]
    before = len(lint.problems)
    try:
        run = subprocess.run(command, cwd=lint.root, capture_output=True,
                             text=True)
    except OSError as e:
        lint.report("cppcheck", "cannot run (%s): make deps installs it" % e)
        return
    for line in run.stderr.split("\n") + run.stdout.split("\n"):
        if ": cppcheck " in line:
            where, message = line.split(": ", 1)
            lint.report(where, message)
    if run.returncode != 0 and len(lint.problems) == before:
        lint.report("cppcheck", "exit %d: %s" % (run.returncode,
                                                 run.stderr.strip()[-500:]))


# ---- main ---------------------------------------------------------------

RULES = ("layers", "purpose", "length", "filesize", "symbols", "cppcheck")


def main(argv):
    parser = argparse.ArgumentParser(
        description="make lint: the rules are described atop this script")
    parser.add_argument("--root", default=".",
                        help="the tree to lint (default: the current folder)")
    parser.add_argument("--rule", action="append", choices=RULES,
                        help="run only this rule (repeatable)")
    parser.add_argument("--lib", default="build/lib/libtf.so",
                        help="the shared library for the symbols rule, "
                        "relative to the root")
    parser.add_argument("--jobs", type=int, default=2,
                        help="cppcheck's -j (default 2)")
    args = parser.parse_args(argv)
    lint = Lint(os.path.abspath(args.root))
    checks = {
        "layers": check_layers, "purpose": check_purpose,
        "length": check_length, "filesize": check_filesize,
        "symbols": lambda l: check_symbols(l, args.lib),
        "cppcheck": lambda l: check_cppcheck(l, args.jobs),
    }
    started = time.monotonic()
    for rule in args.rule or RULES:
        before = len(lint.problems)
        checks[rule](lint)
        if len(lint.problems) > before:
            print("\n".join(lint.problems[before:]))
    took = time.monotonic() - started
    rules = ", ".join(args.rule or RULES)
    if lint.problems:
        print("lint: %d problems (%s) in %.1fs" % (len(lint.problems), rules,
                                                    took))
        return 1
    print("lint: clean (%s) in %.1fs" % (rules, took))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
