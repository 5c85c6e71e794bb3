"""Test fixtures: a fake Hugging Face Hub on 127.0.0.1 and writers for tiny safetensors and GGUF files.

The fake answers what ``huggingface_hub`` 2.4 requests (shared/research/ecosystem.md §4): ``/api/models``
(search with ``Link`` pagination and ``expand`` projection), ``/api/models/{repo}``, the one-request
``/api/models/{repo}/safetensors-metadata/{index}`` (optional), and ``/{repo}/resolve/{rev}/{file}`` with
``ETag``, ``X-Repo-Commit`` and byte ranges. Gated repos answer 401 (no token) / 403 (a token) with
``X-Error-Code: GatedRepo``; ``fail`` and ``delay`` make chosen paths fail or stall.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import struct
import threading
import time
from collections.abc import Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

COMMIT = "0123456789abcdef0123456789abcdef01234567"

ST_SIZE = {"F32": 4, "F16": 2, "BF16": 2, "I8": 1, "U8": 1, "F64": 8, "I64": 8, "I32": 4, "F8_E4M3": 1}


def safetensors_bytes(
    tensors: dict[str, tuple[str, tuple[int, ...]]], metadata: dict[str, str] | None = None, data: bool = True
) -> bytes:
    """{name: (dtype, shape)} -> a valid safetensors file (zero data; BF16 written raw)."""
    header: dict[str, Any] = {}
    off = 0
    for name, (dt, shape) in tensors.items():
        n = ST_SIZE[dt]
        for s in shape:
            n *= s
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    if metadata is not None:
        header["__metadata__"] = metadata
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * ((8 - len(hb) % 8) % 8)
    return struct.pack("<Q", len(hb)) + hb + (b"\0" * off if data else b"")


# ---------------------------------------------------------------------------------------------- GGUF writer

GGML = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q8_0": (8, 32, 34), "Q4_K": (12, 256, 144),
        "Q6_K": (14, 256, 210), "BF16": (30, 1, 2)}  # fmt: skip


def _gguf_str(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def _gguf_value(v: Any) -> bytes:
    if isinstance(v, bool):
        return struct.pack("<I?", 7, v)
    if isinstance(v, int):
        return struct.pack("<Iq", 11, v) if v < 0 or v >= 2**32 else struct.pack("<II", 4, v)
    if isinstance(v, float):
        return struct.pack("<If", 6, v)
    if isinstance(v, str):
        return struct.pack("<I", 8) + _gguf_str(v)
    if isinstance(v, list):
        if v and isinstance(v[0], str):
            return struct.pack("<IIQ", 9, 8, len(v)) + b"".join(_gguf_str(x) for x in v)
        if v and isinstance(v[0], float):
            return struct.pack("<IIQ", 9, 6, len(v)) + struct.pack(f"<{len(v)}f", *v)
        return struct.pack("<IIQ", 9, 5, len(v)) + struct.pack(f"<{len(v)}i", *v)
    raise TypeError(v)


def gguf_bytes(
    kv: dict[str, Any], tensors: Iterable[tuple[str, str, tuple[int, ...]]], *, data: bool = True, alignment: int = 32
) -> bytes:
    """A GGUF v3 file: metadata ``kv`` and ``tensors`` = (name, ggml type, shape in ggml order), zero data."""
    tensors = list(tensors)
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv)))
    for k, v in kv.items():
        out += _gguf_str(k) + _gguf_value(v)
    off = 0
    sizes = []
    for name, t, shape in tensors:
        tid, blk, bb = GGML[t]
        n = 1
        for d in shape:
            n *= d
        size = n // blk * bb
        out += _gguf_str(name) + struct.pack("<I", len(shape)) + struct.pack(f"<{len(shape)}Q", *shape)
        out += struct.pack("<IQ", tid, off)
        sizes.append(size)
        off += (size + alignment - 1) // alignment * alignment
    if data:
        out += b"\0" * ((-len(out)) % alignment)
        out += b"\0" * off
    return bytes(out)


def llama_gguf(
    *,
    arch: str = "llama",
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    ff: int = 128,
    vocab: int = 256,
    tied: bool = False,
    wtype: str = "Q8_0",
    extra_kv: dict[str, Any] | None = None,
    tokens: bool = True,
) -> tuple[bytes, dict[str, tuple[str, tuple[int, ...]]]]:
    """A small llama.cpp-style model file and its {name: (type, ggml shape)} tensors."""
    hd = hidden // heads
    t: dict[str, tuple[str, tuple[int, ...]]] = {"token_embd.weight": (wtype, (hidden, vocab))}
    for i in range(layers):
        p = f"blk.{i}"
        t[f"{p}.attn_norm.weight"] = ("F32", (hidden,))
        t[f"{p}.attn_q.weight"] = (wtype, (hidden, heads * hd))
        t[f"{p}.attn_k.weight"] = (wtype, (hidden, kv_heads * hd))
        t[f"{p}.attn_v.weight"] = (wtype, (hidden, kv_heads * hd))
        t[f"{p}.attn_output.weight"] = (wtype, (heads * hd, hidden))
        t[f"{p}.ffn_norm.weight"] = ("F32", (hidden,))
        t[f"{p}.ffn_gate.weight"] = (wtype, (hidden, ff))
        t[f"{p}.ffn_up.weight"] = (wtype, (hidden, ff))
        t[f"{p}.ffn_down.weight"] = ("Q6_K" if wtype == "Q4_K" else wtype, (ff, hidden))
    t["output_norm.weight"] = ("F32", (hidden,))
    if not tied:
        t["output.weight"] = ("Q6_K" if wtype == "Q4_K" else wtype, (hidden, vocab))
    kv: dict[str, Any] = {
        "general.architecture": arch,
        "general.name": "tiny",
        "general.file_type": 7,
        f"{arch}.context_length": 4096,
        f"{arch}.embedding_length": hidden,
        f"{arch}.block_count": layers,
        f"{arch}.feed_forward_length": ff,
        f"{arch}.attention.head_count": heads,
        f"{arch}.attention.head_count_kv": kv_heads,
        f"{arch}.rope.freq_base": 10000.0,
        f"{arch}.attention.layer_norm_rms_epsilon": 1e-5,
        "tokenizer.ggml.model": "gpt2",
    }
    if tokens:
        kv["tokenizer.ggml.tokens"] = [f"tok{i}" for i in range(vocab)]
        kv["tokenizer.ggml.token_type"] = [1] * vocab
    kv.update(extra_kv or {})
    return gguf_bytes(kv, [(n, ty, s) for n, (ty, s) in t.items()]), t


# ---------------------------------------------------------------------------------------------- tiny model

TINY_CONFIG: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 256,
    "max_position_embeddings": 2048,
    "rms_norm_eps": 1e-5,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def tiny_llama_tensors(
    cfg: dict[str, Any] = TINY_CONFIG, dtype: str = "BF16"
) -> dict[str, tuple[str, tuple[int, ...]]]:
    h, inter, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    hd = h // cfg["num_attention_heads"]
    kvd = cfg["num_key_value_heads"] * hd
    t: dict[str, tuple[str, tuple[int, ...]]] = {"model.embed_tokens.weight": (dtype, (v, h))}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}"
        t[f"{p}.input_layernorm.weight"] = (dtype, (h,))
        t[f"{p}.post_attention_layernorm.weight"] = (dtype, (h,))
        t[f"{p}.self_attn.q_proj.weight"] = (dtype, (h, h))
        t[f"{p}.self_attn.k_proj.weight"] = (dtype, (kvd, h))
        t[f"{p}.self_attn.v_proj.weight"] = (dtype, (kvd, h))
        t[f"{p}.self_attn.o_proj.weight"] = (dtype, (h, h))
        t[f"{p}.mlp.gate_proj.weight"] = (dtype, (inter, h))
        t[f"{p}.mlp.up_proj.weight"] = (dtype, (inter, h))
        t[f"{p}.mlp.down_proj.weight"] = (dtype, (h, inter))
    t["model.norm.weight"] = (dtype, (h,))
    if not cfg.get("tie_word_embeddings"):
        t["lm_head.weight"] = (dtype, (v, h))
    return t


def shard(tensors: dict[str, tuple[str, tuple[int, ...]]], n: int) -> dict[str, bytes]:
    """Split tensors into ``n`` safetensors shards plus a model.safetensors.index.json."""
    names = list(tensors)
    files: dict[str, bytes] = {}
    weight_map: dict[str, str] = {}
    for k in range(n):
        fname = f"model-{k + 1:05d}-of-{n:05d}.safetensors"
        part = {name: tensors[name] for name in names[k::n]}
        files[fname] = safetensors_bytes(part)
        weight_map.update(dict.fromkeys(part, fname))
    files["model.safetensors.index.json"] = json.dumps(
        {"metadata": {"total_size": 0}, "weight_map": weight_map}
    ).encode()
    return files


# ---------------------------------------------------------------------------------------------- the fake Hub


class FakeHub:
    def __init__(self, host: str = "127.0.0.1", page_size: int = 2) -> None:
        self.repos: dict[str, dict[str, Any]] = {}
        self.gated: set[str] = set()
        self.log: list[tuple[str, str, dict[str, list[str]], dict[str, str]]] = []
        #: path regex -> seconds to wait before answering
        self.delay: dict[str, float] = {}
        #: path regex -> (HTTP status, X-Error-Code or "")
        self.fail: dict[str, tuple[int, str]] = {}
        #: serve /api/models/{repo}/safetensors-metadata/... (the Hub's one-request sharded headers)
        self.sharded_endpoint = False
        self.page_size = page_size
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                hub._handle(self, head=True)

            def do_GET(self) -> None:
                hub._handle(self, head=False)

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://{host}:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)

    def __enter__(self) -> FakeHub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def add_model(self, repo_id: str, info: dict[str, Any] | None = None, files: dict[str, Any] | None = None) -> None:
        data = {k: (v.encode() if isinstance(v, str) else v) for k, v in (files or {}).items()}
        meta = dict(info or {})
        meta.setdefault("id", repo_id)
        meta.setdefault("sha", COMMIT)
        meta.setdefault("pipeline_tag", "text-generation")
        meta.setdefault("siblings", [{"rfilename": f, "size": len(b)} for f, b in data.items()])
        self.repos[repo_id] = {"info": meta, "files": data}

    def paths(self, method: str | None = None) -> list[str]:
        return [p for m, p, _, _ in self.log if method is None or m == method]

    # ---- HTTP
    def _send(
        self,
        h: BaseHTTPRequestHandler,
        code: int,
        body: bytes = b"",
        ctype: str = "application/json",
        headers: dict[str, str] | None = None,
        head: bool = False,
    ) -> None:
        try:
            h.send_response(code)
            h.send_header("Content-Type", ctype)
            h.send_header("Content-Length", str(len(body)))
            h.send_header("Connection", "close")
            h.close_connection = True
            for k, v in (headers or {}).items():
                h.send_header(k, v)
            h.end_headers()
            if not head:
                h.wfile.write(body)
        except OSError:  # the client gave up (timeout tests)
            pass

    def _json(self, h: BaseHTTPRequestHandler, obj: Any, code: int = 200, headers: dict[str, str] | None = None,
              head: bool = False) -> None:  # fmt: skip
        self._send(h, code, json.dumps(obj).encode(), headers=headers, head=head)

    def _err(self, h: BaseHTTPRequestHandler, code: int, error_code: str, msg: str, head: bool = False) -> None:
        hdr = {"X-Error-Message": msg}
        if error_code:
            hdr["X-Error-Code"] = error_code
        self._json(h, {"error": msg}, code, hdr, head)

    @staticmethod
    def _project(info: dict[str, Any], q: dict[str, list[str]]) -> dict[str, Any]:
        expand = q.get("expand") or q.get("expand[]")
        return {k: v for k, v in info.items() if not expand or k in set(expand) | {"id", "_id"}}

    def _handle(self, h: BaseHTTPRequestHandler, head: bool) -> None:
        u = urlsplit(h.path)
        q = parse_qs(u.query, keep_blank_values=True)
        keep = ("range", "user-agent", "authorization")
        self.log.append((h.command, u.path, q, {k.lower(): v for k, v in h.headers.items() if k.lower() in keep}))
        # (copies: a test may change the delays and failures while a server thread answers an earlier request)
        for pattern, seconds in list(self.delay.items()):
            if re.search(pattern, u.path):
                time.sleep(seconds)
        for pattern, (status, code) in list(self.fail.items()):
            if re.search(pattern, u.path):
                return self._err(h, status, code, f"failure {status}", head)
        if u.path == "/api/models":
            return self._search(h, q, head)
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/safetensors-metadata/(.+)", u.path)
        if m:
            return self._sharded(h, m.group(1), m.group(2), head)
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)(?:/revision/[^/]+)?", u.path)
        if m:
            repo = self.repos.get(m.group(1))
            if repo is None:
                return self._err(h, 401, "RepoNotFound", "Repository not found", head)
            return self._json(h, self._project(repo["info"], q), head=head)
        m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", u.path)
        if m:
            return self._file(h, m.group(1), m.group(3), head)
        self._err(h, 404, "", "no route", head)

    def _search(self, h: BaseHTTPRequestHandler, q: dict[str, list[str]], head: bool) -> None:
        words = (q.get("search") or [""])[0].lower().split()
        tags = q.get("pipeline_tag")
        hits = [
            r["info"]
            for rid, r in self.repos.items()
            if all(w in rid.lower() for w in words) and (not tags or r["info"].get("pipeline_tag") in tags)
        ]
        if (q.get("sort") or [""])[0] == "downloads":
            hits.sort(key=lambda i: -int(i.get("downloads") or 0))
        limit = int((q.get("limit") or ["1000"])[0])
        off = int((q.get("cursor") or ["0"])[0])
        page = hits[off : off + min(limit, self.page_size)]
        hdr = {}
        if off + len(page) < min(len(hits), limit):
            nq = dict(q)
            nq["cursor"] = [str(off + len(page))]
            hdr["Link"] = f'<{self.url}/api/models?{urlencode(nq, doseq=True)}>; rel="next"'
        self._json(h, [self._project(i, q) for i in page], headers=hdr, head=head)

    def _sharded(self, h: BaseHTTPRequestHandler, repo_id: str, index_name: str, head: bool) -> None:
        repo = self.repos.get(repo_id)
        if not self.sharded_endpoint or repo is None or index_name not in repo["files"]:
            return self._err(h, 404, "", "no route", head)
        index = json.loads(repo["files"][index_name])
        headers = {}
        for shard_name in sorted(set(index["weight_map"].values())):
            data = repo["files"][shard_name]
            (n,) = struct.unpack_from("<Q", data)
            headers[shard_name] = json.loads(data[8 : 8 + n])
        self._json(h, {"index": index, "headers": headers}, head=head)

    def _file(self, h: BaseHTTPRequestHandler, repo_id: str, filename: str, head: bool) -> None:
        repo = self.repos.get(repo_id)
        if repo is None:
            return self._err(h, 401, "RepoNotFound", "Repository not found", head)
        if repo_id in self.gated:
            token = h.headers.get("Authorization")
            code = 403 if token else 401
            return self._err(h, code, "GatedRepo", "Access to model is restricted", head)
        data = repo["files"].get(filename)
        if data is None:
            hdr = {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": COMMIT}
            return self._json(h, {"error": "Entry not found"}, 404, hdr, head)
        hdr = {"ETag": '"' + hashlib.sha1(data).hexdigest() + '"', "X-Repo-Commit": COMMIT, "Accept-Ranges": "bytes"}
        rng = h.headers.get("Range")
        if rng and not head:
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng)
            assert m is not None
            a = int(m.group(1))
            b = min(int(m.group(2)) if m.group(2) else len(data) - 1, len(data) - 1)
            hdr["Content-Range"] = f"bytes {a}-{b}/{len(data)}"
            return self._send(h, 206, data[a : b + 1], "application/octet-stream", hdr)
        return self._send(h, 200, data, "application/octet-stream", hdr, head=head)


@contextlib.contextmanager
def hub_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeHub]:
    """A running fake Hub that the app reaches through HF_ENDPOINT, online, with temporary caches and no token."""
    import huggingface_hub.constants as hf_constants

    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf_constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("VRAMDESK_CACHE_DIR", str(tmp_path / "vramdesk-cache"))
    with FakeHub() as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        yield fake
