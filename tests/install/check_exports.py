"""librnnc.so exports exactly the public API: every symbol `nm` lists as defined must be declared
by a public header, and every C API function must be there.

  check_exports.py INCLUDE_DIR LIBRARY [nm option...]      (default option: --dynamic)

The allowed symbols come from the headers in INCLUDE_DIR/rnnc:
  - C: the rnnc_* functions rnnc_c.h declares;
  - C++: names in namespace rnnc whose every component (rnnc::Session::run) the C++ headers
    declare, and the type information and virtual tables of classes they define. Members of a
    class a header only declares (struct Impl;) are internal.
Exit 1 listing what is not allowed, or which C function is missing.
"""

import re
import subprocess
import sys

include_dir, library = sys.argv[1], sys.argv[2]
nm_options = sys.argv[3:] or ["--dynamic"]


def read(name):
    with open(f"{include_dir}/rnnc/{name}") as header:
        # Comments out: a name a comment mentions is not declared.
        return re.sub(r"//[^\n]*|/\*.*?\*/", "", header.read(), flags=re.S)


c_header = read("rnnc_c.h")
cxx_headers = read("rnnc.h") + read("error.h")

c_functions = set(re.findall(r"\b(rnnc_\w+)\s*\(", c_header))
# Every identifier the C++ headers declare or use before a '(' or as a type name.
cxx_names = set(re.findall(r"~?\b\w+\b", cxx_headers))
cxx_names |= {"operator" + op for op in re.findall(r"\boperator\s*([^\w\s(]+)\s*\(", cxx_headers)}
defined_classes = set(re.findall(r"\b(?:class|struct)\s+(\w+)[^;{]*\{", cxx_headers))
declared_only = set(re.findall(r"\b(?:class|struct)\s+(\w+)\s*;", cxx_headers)) - defined_classes


def components(qualified):
    """'rnnc::A<x::y>::b' -> ['rnnc', 'A', 'b'] (template arguments dropped)."""
    parts, depth, current = [], 0, ""
    k = 0
    while k < len(qualified):
        c = qualified[k]
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif depth == 0 and qualified.startswith("::", k):
            parts.append(current)
            current = ""
            k += 2
            continue
        elif depth == 0:
            current += c
        k += 1
    return parts + [current]


def allowed(symbol):
    if re.fullmatch(r"rnnc_\w+", symbol):
        return symbol in c_functions
    symbol = re.sub(r"\[abi:\w+\]", "", symbol)
    special = re.fullmatch(r"(?:typeinfo for|typeinfo name for|vtable for) (rnnc::\w+)", symbol)
    if special:
        return components(special.group(1))[1] in defined_classes
    name = symbol.split("(", 1)[0].strip()
    parts = components(name)
    if parts[0] != "rnnc" or len(parts) < 2:
        return False
    if any(part in declared_only for part in parts[1:-1]):
        return False  # a member of an opaque class
    return all(part in cxx_names for part in parts[1:])


listing = subprocess.run(["nm", "--defined-only", "--demangle", *nm_options, library],
                         check=True, capture_output=True, text=True).stdout
symbols = []
for line in listing.splitlines():
    match = re.match(r"^[0-9a-f]+ [A-Za-z] (.+)$", line)
    if match:
        symbols.append(match.group(1))

not_allowed = sorted({s for s in symbols if not allowed(s)})
missing = sorted(c_functions - set(symbols))
for symbol in not_allowed:
    print(f"not declared by a public header: {symbol}")
for function in missing:
    print(f"C API function not exported: {function}")
if not_allowed or missing:
    print(f"FAIL: {library}: {len(not_allowed)} symbols outside the public API, "
          f"{len(missing)} C API functions missing")
    sys.exit(1)
print(f"OK: {library} exports {len(symbols)} symbols, all declared by the public headers, "
      f"and all {len(c_functions)} C API functions")
