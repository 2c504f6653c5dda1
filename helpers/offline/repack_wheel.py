"""Repacks wheels for the offline GPU bundle (scripts/libexec/gpu_bundle.sh):
each file stored uncompressed (the bundle's xz then compresses the real bytes,
which a wheel's deflate hides from it), ELF files stripped of their symbol
tables (not the libraries auditwheel grafted into <name>.libs/), and what a GPU smoke never loads left out. RECORD is rewritten (each
file's sha256 and size, as the wheel spec asks) so pip installs the result;
<name>.dist-info/mvp-pruned.txt lists every path left out, and the `pruned` lines
this prints say the same for the bundle's MANIFEST.

Usage: python3 repack_wheel.py OUT_DIR [--no-strip] WHEEL...
Standard library only; `strip` (binutils) when present.
"""
import argparse
import base64
import fnmatch
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile

# The model families of transformers the bundle keeps: the tiny model's
# (qwen2, which borrows from llama), the auto classes, and those verl 0.9.1
# imports by module path (verl/models/transformers/*.py, its monkey patches).
# (read from verl's imports of `transformers` and `transformers.models.*`:
# verl/utils/model.py imports MistralForSequenceClassification at its top),
# and those peft and accelerate import by module path (bert, gpt2, bloom);
# then what these import of each other at run time (their modular_*.py are
# sources, never imported): encoder_decoder (auto's tokenizers), roberta (bart).
TRANSFORMERS_KEPT = ("auto", "llama", "mistral", "qwen2", "qwen2_vl", "qwen2_5_vl", "qwen3", "qwen3_moe", "qwen3_next",
                     "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe", "glm4v", "glm46v", "apertus", "bart",
                     "bert", "gpt2", "bloom", "encoder_decoder", "roberta")

# What each distribution carries that a one-node GPU smoke (Ray head and
# worker, `ray job submit`, verl's FSDP trainer with the hf rollout) never
# loads: (pattern of the path in the wheel, why). fnmatch patterns; KEEP
# names paths a pattern matches that stay all the same.
# Every family's __init__.py stays: AutoTokenizer imports, in the order of its
# mapping, the first family whose tokenizer has the class's name (Qwen2Tokenizer:
# audioflamingo3 before qwen2) and goes on only when that one lacks it.
# Every family's configuration_*.py stays: verl's FSDP engine picks the model's
# auto class with `type(hf_config) in AutoModelForImageTextToText._model_mapping.keys()`
# (verl/utils/model.py:711), and keys() imports the config class of every family
# in that mapping (transformers' auto_factory.py, _LazyAutoMapping.keys): pruned,
# the first GPU smoke on an H200 failed there ("Could not find AriaConfig").
KEEP = {"transformers": [f"transformers/models/{m}/*" for m in TRANSFORMERS_KEPT] + [
    "transformers/models/__init__.py", "transformers/models/*/__init__.py", "transformers/models/*/configuration_*.py"]}
PRUNE = {
    "transformers": [
        ("transformers/models/*", f"model families other than {', '.join(TRANSFORMERS_KEPT)} (the tiny model is "
                                  "qwen2; these are the ones verl imports by name)"),
    ],
    "pillow": [
        ("pillow.libs/libavif*", "AVIF images (5 MB): the smoke's data is text"),
        ("PIL/_avif*", "AVIF images: the smoke's data is text"),
        ("pillow.libs/libwebp*", "WebP images: the smoke's data is text"),
        ("pillow.libs/libsharpyuv*", "WebP images: the smoke's data is text"),
        ("PIL/_webp*", "WebP images: the smoke's data is text"),
        ("pillow.libs/libfreetype*", "drawing text on images (fonts)"),
        ("pillow.libs/libharfbuzz*", "drawing text on images (fonts)"),
        ("pillow.libs/libbrotli*", "drawing text on images (fonts)"),
        ("pillow.libs/libpng16*", "drawing text on images (fonts)"),
        ("PIL/_imagingft*", "drawing text on images (fonts)"),
        ("pillow.libs/liblcms2*", "colour management of images"),
        ("PIL/_imagingcms*", "colour management of images"),
    ],
    "numpy": [
        ("numpy/tests/*", "numpy's test suite"), ("numpy/*/tests/*", "numpy's test suite"),
        ("numpy/_core/include/*", "C headers: building against numpy only"),
        ("numpy/_core/lib/*", "static npymath library and pkg-config file: building against numpy only"),
        ("numpy/f2py/*", "the Fortran wrapper generator: building Fortran extensions only"),
        ("numpy/random/_examples/*", "examples of extending numpy.random (Cython, cffi, numba)"),
        ("numpy/_core/_simd*", "numpy's SIMD test module (numpy/_core/_simd: its own tests only, never imported "
                               "by numpy)"),
        ("*.pyi", "type stubs: read by type checkers, never imported"),
        ("*.pxd", "Cython declarations: building against numpy only"),
    ],
    "pandas": [("pandas/tests/*", "pandas's test suite (18 MB)"),
               ("*.pyi", "type stubs: read by type checkers, never imported")],
    "ray": [
        ("ray/jars/*", "Ray's Java worker (34 MB jar): no Java jobs here"),
        ("*.map", "the dashboard UI's JavaScript source maps: debugging the UI only"),
        ("ray/rllib/*", "RLlib: Ray's own RL library; verl does not use it"),
        ("ray/data/*", "Ray Data: verl reads its parquet with datasets, not Ray Data"),
        ("ray/serve/*", "Ray Serve: no model serving here (the dashboard imports it only on a Serve request)"),
        ("ray/train/*", "Ray Train: verl places its own workers"),
        ("ray/tune/*", "Ray Tune: no hyperparameter search here"),
        ("ray/air/*", "Ray AIR: the shared layer of Train and Tune"),
        ("ray/llm/*", "Ray's LLM serving and batch inference"),
        ("ray/dashboard/client/build/static/js/*", "the dashboard web UI's JavaScript (the job REST API needs none of "
                                                   "it; the build directory, index.html and static/css stay, as the "
                                                   "dashboard refuses to start without them)"),
        ("ray/dashboard/client/build/static/media/*", "the dashboard web UI's fonts and images"),
        ("ray/dashboard/client/build/speedscope-*", "the dashboard's flame-graph viewer (speedscope)"),
        ("*.pyi", "type stubs: read by type checkers, never imported"),
        ("ray/core/libjemalloc.so", "jemalloc, which Ray preloads into its raylet only when present "
                                    "(ray/_private/services.py: JEMALLOC_SO): glibc's malloc serves a one-node smoke"),
    ],
    "pyarrow": [
        ("pyarrow/include/*", "C++ headers: building against Arrow only"),
        ("pyarrow/src/*", "C++ sources: building against Arrow only"),
        ("pyarrow/tests/*", "pyarrow's test suite"),
        ("pyarrow/*flight*", "Arrow Flight RPC (32 MB): not used for parquet files"),
        ("pyarrow/*s3*", "the S3 filesystem (17 MB): data is on the shared root"),
        ("pyarrow/_pyarrow_cpp_tests*", "pyarrow's C++ test hooks"),
        ("pyarrow/*.pyx", "Cython sources: building pyarrow only"),
        ("pyarrow/*.pxd", "Cython declarations: building against pyarrow only"),
        ("pyarrow/*.pxi", "Cython sources: building pyarrow only"),
        ("pyarrow/*.pyi", "type stubs: read by type checkers, never imported"),
        ("pyarrow/*substrait*", "Substrait query plans (6 MB; pyarrow.dataset imports it only if present): "
                                "the other libraries' link to it is removed (UNLINKED)"),
        ("pyarrow/*orc*", "the ORC file format (pyarrow.dataset imports it only if present): the data is parquet"),
        ("pyarrow/*parquet_encryption*", "Parquet Modular Encryption (imported only if present): the data is "
                                         "not encrypted"),
        ("pyarrow/_hdfs*", "the HDFS filesystem (imported only if present): data is on the shared root"),
        ("pyarrow/_gcsfs*", "the Google Cloud Storage filesystem (imported only if present): data is on the "
                            "shared root"),
        ("pyarrow/_azurefs*", "the Azure Blob filesystem (imported only if present): data is on the shared root"),
    ],
}
# Libraries PRUNE leaves out that the wheel's other ELF files still name as
# DT_NEEDED without taking a symbol from them (`nm -D --undefined-only`
# against the library's `nm -D --defined-only`: pyarrow 26.0.1's lib.*.so,
# libarrow_python and every _*.so but _substrait name libarrow_substrait and
# use none of its symbols): the entry is removed from each, as `patchelf
# --remove-needed` does, so the loader does not look for the library.
UNLINKED = {"pyarrow": ("libarrow_substrait.so*",)}
ELF_MAGIC = b"\x7fELF"


def dist_name(wheel: str) -> str:
    return os.path.basename(wheel).split("-", 1)[0].lower().replace("_", "-")


def pruned_by(dist: str, path: str):
    if any(fnmatch.fnmatch(path, keep) for keep in KEEP.get(dist, ())):
        return None
    for pattern, why in PRUNE.get(dist, ()):
        if fnmatch.fnmatch(path, pattern):
            return why
    return None


def stripped(data: bytes) -> bytes:
    """DATA without its symbol tables (strip --strip-unneeded), or DATA."""
    with tempfile.NamedTemporaryFile(delete=False) as fh:
        fh.write(data)
    try:
        done = subprocess.run(["strip", "--strip-unneeded", fh.name], capture_output=True)
        if done.returncode != 0:
            return data
        with open(fh.name, "rb") as back:
            return back.read()
    finally:
        os.unlink(fh.name)


def without_needed(data: bytes, names) -> bytes:
    """DATA, a 64-bit little-endian ELF file, without the DT_NEEDED entries
    of its dynamic section whose library matches one of NAMES (fnmatch): the
    later entries move up, DT_NULL fills the end; nothing else changes."""
    if data[4:6] != b"\x02\x01":
        return data
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    headers = [struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize) for i in range(phnum)]
    dynamic = next(((off, size) for kind, _, off, _, _, size in headers if kind == 2), None)  # PT_DYNAMIC
    if dynamic is None:
        return data
    entries = [struct.unpack_from("<qQ", data, dynamic[0] + 16 * i) for i in range(dynamic[1] // 16)]
    strtab = next(value for tag, value in entries if tag == 5)  # DT_STRTAB, an address
    base = next(off + strtab - addr for kind, _, off, addr, _, size in headers
                if kind == 1 and addr <= strtab < addr + size)  # its PT_LOAD, to a file offset

    def library(offset):
        return data[base + offset:data.index(b"\0", base + offset)].decode()

    kept = [(tag, value) for tag, value in entries
            if tag != 1 or not any(fnmatch.fnmatch(library(value), n) for n in names)]  # DT_NEEDED
    if len(kept) == len(entries):
        return data
    out = bytearray(data)
    for i, (tag, value) in enumerate(kept + [(0, 0)] * (len(entries) - len(kept))):
        struct.pack_into("<qQ", out, dynamic[0] + 16 * i, tag, value)
    return bytes(out)


def prepared(dist: str, path: str, data: bytes, strip: bool) -> bytes:
    """A kept file as it goes into the repacked wheel: an ELF file stripped
    (unless grafted) and without its DT_NEEDED on UNLINKED libraries."""
    if data[:4] != ELF_MAGIC:
        return data
    if strip and not grafted(path):
        data = stripped(data)
    return without_needed(data, UNLINKED.get(dist, ()))


def grafted(path: str) -> bool:
    """A library auditwheel copied into <name>.libs/ and rewrote with patchelf:
    strip breaks its program headers ("ELF load command address/offset not
    page-aligned", numpy's OpenBLAS), and auditwheel's copies are stripped
    already."""
    return path.split("/", 1)[0].endswith(".libs")


def record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def repack(wheel: str, out_dir: str, strip: bool) -> list:
    """Writes OUT_DIR/<same name>; returns [(path, why)] of what it left out."""
    dist, dropped, records = dist_name(wheel), [], []
    out = os.path.join(out_dir, os.path.basename(wheel))
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out + ".tmp", "w", zipfile.ZIP_STORED) as dst:
        names = src.namelist()
        # The wheel's own RECORD, at the top: a vendored package may carry one deeper.
        record = next(n for n in names if n.count("/") == 1 and n.endswith(".dist-info/RECORD"))
        for info in src.infolist():
            if info.is_dir() or info.filename == record:
                continue
            why = pruned_by(dist, info.filename)
            if why:
                dropped.append((info.filename, why))
                continue
            data = prepared(dist, info.filename, src.read(info), strip)
            copy = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            copy.external_attr = info.external_attr
            dst.writestr(copy, data)
            records.append(record_line(info.filename, data))
        if dropped:
            note = "".join(f"{path}\t{why}\n" for path, why in dropped).encode()
            note_path = record.rsplit("/", 1)[0] + "/mvp-pruned.txt"
            dst.writestr(note_path, note)
            records.append(record_line(note_path, note))
        dst.writestr(record, "\n".join(records + [f"{record},,"]) + "\n")
    os.replace(out + ".tmp", out)
    return dropped


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--no-strip", action="store_true")
    ap.add_argument("wheels", nargs="+")
    args = ap.parse_args()
    strip = not args.no_strip and shutil.which("strip") is not None
    for wheel in args.wheels:
        dropped = repack(wheel, args.out_dir, strip)
        reasons = sorted({why for _, why in dropped})
        for why in reasons:
            count = sum(1 for _, w in dropped if w == why)
            print(f"pruned\t{os.path.basename(wheel)}\t{count} files\t{why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
