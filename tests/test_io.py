"""Canonical JSON, hashes, atomic writes and the append-only log."""

from __future__ import annotations

import hashlib
import json

import pytest

from workbench._io import (
    AppendOnlyLog,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    canonical_json,
    iter_jsonl_lines,
    sha256_file,
    sha256_json,
    sha256_text,
    write_jsonl,
)


def test_canonical_json_is_sorted_and_compact():
    obj = {"b": 1, "a": {"d": [1, 2], "c": None}, "é": "ü"}
    assert canonical_json(obj) == '{"a":{"c":null,"d":[1,2]},"b":1,"é":"ü"}'
    assert canonical_json({"a": 1, "b": 2}) == canonical_json({"b": 2, "a": 1})


def test_canonical_json_refuses_nan():
    with pytest.raises(ValueError, match="not JSON compliant"):
        canonical_json({"x": float("nan")})


def test_hashes_match_hashlib():
    text = '{"a":1,"é":"ü"}'
    assert sha256_text(text) == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert sha256_json({"é": "ü", "a": 1}) == hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_sha256_file(tmp_path):
    path = tmp_path / "f.bin"
    data = bytes(range(256)) * 5000  # > 1 MiB block size
    path.write_bytes(data)
    assert sha256_file(path) == hashlib.sha256(data).hexdigest()


def test_atomic_write_replaces_and_leaves_no_temp_files(tmp_path):
    target = tmp_path / "sub" / "out.json"
    atomic_write_text(target, "old")
    atomic_write_json(target, {"b": 1, "a": [1]})
    assert json.loads(target.read_text()) == {"a": [1], "b": 1}
    assert target.read_text().index('"a"') < target.read_text().index('"b"')
    assert [p.name for p in target.parent.iterdir()] == ["out.json"]


def test_failed_atomic_write_keeps_the_old_file_and_no_temp_files(tmp_path):
    target = tmp_path / "out.txt"
    atomic_write_text(target, "old")
    with pytest.raises(TypeError):
        atomic_write_bytes(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_write_jsonl_and_iter_lines(tmp_path):
    path = tmp_path / "rows.jsonl"
    assert write_jsonl(path, [{"b": 1, "a": 2}, {"c": "é"}]) == 2
    assert path.read_text(encoding="utf-8") == '{"a": 2, "b": 1}\n{"c": "é"}\n'
    path.write_text('{"a": 1}\n\n   \n{"b": 2}  \n', encoding="utf-8")
    assert list(iter_jsonl_lines(path)) == [(1, '{"a": 1}'), (4, '{"b": 2}')]


def test_iter_lines_reports_undecodable_lines_when_asked(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"a": 1}\n\xff\xfe\n{"b": 2}\n')
    bad: list[int] = []
    assert list(iter_jsonl_lines(path, bad)) == [(1, '{"a": 1}'), (3, '{"b": 2}')]
    assert bad == [2]
    with pytest.raises(UnicodeDecodeError):
        list(iter_jsonl_lines(path))


def test_append_only_log_appends_complete_lines(tmp_path):
    path = tmp_path / "log.jsonl"
    with AppendOnlyLog(path) as log:
        log.append({"n": 1})
        log.append({"n": 2, "a": "é"})
    assert [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] == [
        {"n": 1},
        {"a": "é", "n": 2},
    ]
    with AppendOnlyLog(path) as log:  # reopening appends, never truncates
        assert log.repaired_bytes == 0
        log.append({"n": 3})
    assert len(path.read_text().splitlines()) == 3
    assert not (tmp_path / "log.jsonl.torn").exists()


def test_repair_moves_a_torn_last_line_aside(tmp_path):
    path = tmp_path / "log.jsonl"
    complete = b'{"n": 1}\n{"n": 2}\n'
    torn = b'{"n": 3, "reas'
    path.write_bytes(complete + torn)
    with AppendOnlyLog(path) as log:
        assert log.repaired_bytes == len(torn)
        assert path.read_bytes() == complete
        log.append({"n": 3})
    assert path.read_bytes() == complete + b'{"n": 3}\n'
    assert (tmp_path / "log.jsonl.torn").read_bytes() == torn + b"\n"


def test_repair_of_a_file_with_only_a_torn_line(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"n"')
    log = AppendOnlyLog(path)
    log.close()
    assert path.read_bytes() == b""
    assert (tmp_path / "log.jsonl.torn").read_bytes() == b'{"n"\n'


def test_repeated_repairs_keep_every_torn_fragment(tmp_path):
    path = tmp_path / "log.jsonl"
    for fragment in (b'{"a', b'{"b'):
        path.write_bytes(path.read_bytes() + fragment if path.exists() else fragment)
        AppendOnlyLog(path).close()
    assert (tmp_path / "log.jsonl.torn").read_bytes() == b'{"a\n{"b\n'


def test_repair_keeps_a_complete_record_that_only_lacks_its_newline(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2}')  # crash between the record and its newline
    with AppendOnlyLog(path) as log:
        assert log.repaired_bytes == 0
        log.append({"a": 3})
    assert [json.loads(x)["a"] for x in path.read_text().splitlines()] == [1, 2, 3]
    assert not (tmp_path / "log.jsonl.torn").exists()


def test_repair_finds_the_last_newline_beyond_one_block(tmp_path):
    path = tmp_path / "log.jsonl"
    big = json.dumps({"text": "x" * 200_000})
    path.write_bytes(
        big.encode() + b"\n" + big[:150_000].encode()
    )  # torn record > one 64 KiB block
    with AppendOnlyLog(path) as log:
        assert log.repaired_bytes == 150_000
    assert path.read_bytes() == big.encode() + b"\n"
