"""Catalog management and the resumable catalog upload (push) against the in-test fake server."""

from __future__ import annotations

import hashlib
import os

import pytest
from fakes import fail, unary

from earshot_client import Methods, RpcError, StatusCode, catalog_name_of, catalog_signer_key, pb

CALL = pb.RequestEnvelope.CONTROL_CALL


class FakeUploads:
    """The daemon's upload area, as far as a client can tell: begin (or resume the upload of the
    same name, size and digest), pieces at explicit offsets, GetUpload, commit, abort."""

    def __init__(self, server) -> None:
        self.uploads = {}  # id -> dict(name, size, sha256, enable, signer_key, data: bytearray)
        self.installed = {}  # name -> (version, bytes)
        self.pieces = []  # (offset, length) of every UploadChunk received
        self.refuse_next_piece_with = None  # (code, message, truncate_held_to or None)
        self.next_id = 1
        server.handlers[Methods.BEGIN_UPLOAD] = self.begin
        server.handlers[Methods.UPLOAD_CHUNK] = self.chunk
        server.handlers[Methods.GET_UPLOAD] = self.get
        server.handlers[Methods.COMMIT_UPLOAD] = self.commit
        server.handlers[Methods.ABORT_UPLOAD] = self.abort

    def status(self, upload_id, resumed=False) -> pb.UploadStatus:
        u = self.uploads[upload_id]
        return pb.UploadStatus(
            upload_id=upload_id,
            name=u["name"],
            size=u["size"],
            offset=len(u["data"]),
            resumed=resumed,
            sha256=u["sha256"].hex(),
            enable=u["enable"],
        )

    def begin(self, env):
        r = pb.BeginUploadRequest.FromString(env.payload)
        for upload_id, u in self.uploads.items():
            if (u["name"], u["size"], u["sha256"]) == (r.name, r.size, r.sha256):
                return unary(self.status(upload_id, resumed=True))
        upload_id = f"{self.next_id:016x}"
        self.next_id += 1
        self.uploads[upload_id] = dict(
            name=r.name, size=r.size, sha256=r.sha256, enable=r.enable, signer_key=r.signer_key, data=bytearray()
        )
        return unary(self.status(upload_id))

    def chunk(self, env):
        r = pb.UploadChunkRequest.FromString(env.payload)
        self.pieces.append((r.offset, len(r.data)))
        u = self.uploads.get(r.upload_id)
        if u is None:
            return fail(StatusCode.NOT_FOUND, f"no upload {r.upload_id}")
        if self.refuse_next_piece_with is not None:
            code, message, truncate = self.refuse_next_piece_with
            self.refuse_next_piece_with = None
            if truncate is not None:
                del u["data"][truncate:]
            return fail(code, message)
        held = len(u["data"])
        if r.offset > held:
            return fail(StatusCode.OUT_OF_RANGE, f"piece at offset {r.offset}, but {held} bytes are held")
        if r.offset + len(r.data) > u["size"]:
            return fail(StatusCode.OUT_OF_RANGE, "passes the declared size")
        end = r.offset + len(r.data)
        if end > held:
            u["data"] += r.data[held - r.offset :]
        return unary(self.status(r.upload_id))

    def get(self, env):
        r = pb.UploadRequest.FromString(env.payload)
        if r.upload_id not in self.uploads:
            return fail(StatusCode.NOT_FOUND, f"no upload {r.upload_id}")
        return unary(self.status(r.upload_id))

    def commit(self, env):
        r = pb.UploadRequest.FromString(env.payload)
        u = self.uploads.get(r.upload_id)
        if u is None:
            return fail(StatusCode.NOT_FOUND, f"no upload {r.upload_id}")
        if len(u["data"]) != u["size"]:
            return fail(StatusCode.FAILED_PRECONDITION, "bytes missing")
        del self.uploads[r.upload_id]
        if hashlib.sha256(u["data"]).digest() != u["sha256"]:
            return fail(StatusCode.DATA_LOSS, "SHA-256 mismatch")
        version = self.installed.get(u["name"], (0, b""))[0] + 1
        self.installed[u["name"]] = (version, bytes(u["data"]))
        summary = pb.CatalogSummary(
            name=u["name"], version=version, sha256=hashlib.sha256(u["data"]).hexdigest(), byte_count=u["size"]
        )
        return unary(pb.CommitUploadResponse(catalog=summary, replaced=version > 1, install_milliseconds=1.5))

    def abort(self, env):
        r = pb.UploadRequest.FromString(env.payload)
        if r.upload_id not in self.uploads:
            return fail(StatusCode.NOT_FOUND, f"no upload {r.upload_id}")
        status = self.status(r.upload_id)
        del self.uploads[r.upload_id]
        return unary(status)


@pytest.fixture
def uploads(server):
    return FakeUploads(server)


@pytest.fixture
def catalog_file(tmp_path):
    path = tmp_path / "news.earcat"
    path.write_bytes(os.urandom(10_000))
    return path


def test_management_calls_send_the_name_and_return_the_results(server, client):
    def named(result_of):
        return lambda env: unary(result_of(pb.CatalogNameRequest.FromString(env.payload).name))

    server.handlers[Methods.ENABLE_CATALOG] = named(lambda n: pb.CatalogSummary(name=n, enabled=True, active=True))
    server.handlers[Methods.DISABLE_CATALOG] = named(
        lambda n: pb.CatalogSummary(name=n, state=pb.CATALOG_STATE_DISABLED)
    )
    server.handlers[Methods.REMOVE_CATALOG] = named(
        lambda n: pb.RemoveCatalogResponse(removed=pb.CatalogSummary(name=n))
    )
    server.handlers[Methods.LIST_CATALOGS] = lambda env: unary(
        pb.ListCatalogsResponse(
            catalogs=[pb.CatalogSummary(name="demo", version=3)],
            uploads=[pb.UploadStatus(upload_id="ab", name="news", size=10, offset=4)],
            epoch=77,
            topic_seq={"earshot.v1/catalog/": 5},
        )
    )

    assert client.enable_catalog("demo").enabled
    assert client.disable_catalog("demo").state == pb.CATALOG_STATE_DISABLED
    assert client.remove_catalog("old").removed.name == "old"
    listing = client.list_catalogs()
    assert [c.name for c in listing.catalogs] == ["demo"] and listing.catalogs[0].version == 3
    assert [(u.name, u.offset) for u in listing.uploads] == [("news", 4)]
    assert listing.epoch == 77 and listing.topic_seq["earshot.v1/catalog/"] == 5
    assert [c.name for c in client.catalogs()] == ["demo"]  # the older call: the catalogs only

    assert [e.method for e in server.envelopes(CALL)] == [
        "/earshot.v1.Catalogs/Enable",
        "/earshot.v1.Catalogs/Disable",
        "/earshot.v1.Catalogs/Remove",
        "/earshot.v1.Catalogs/List",
        "/earshot.v1.Catalogs/List",
    ]
    assert [pb.CatalogNameRequest.FromString(e.payload).name for e in server.envelopes(CALL)[:3]] == [
        "demo",
        "demo",
        "old",
    ]


def test_management_errors_are_rpc_errors(server, client):
    for method in (Methods.ENABLE_CATALOG, Methods.DISABLE_CATALOG, Methods.REMOVE_CATALOG):
        server.handlers[method] = lambda env: fail(StatusCode.NOT_FOUND, "no catalog named")
    for call in (client.enable_catalog, client.disable_catalog, client.remove_catalog):
        with pytest.raises(RpcError) as info:
            call("nope")
        assert info.value.code == StatusCode.NOT_FOUND


def test_push_sends_the_file_in_pieces_and_commits(server, client, uploads, catalog_file):
    data = catalog_file.read_bytes()
    seen = []
    reply = client.push_catalog(catalog_file, enable=True, chunk_size=4096, progress=lambda *a: seen.append(a))
    assert reply.catalog.name == "news" and reply.catalog.version == 1 and not reply.replaced
    assert reply.catalog.sha256 == hashlib.sha256(data).hexdigest()
    assert uploads.installed["news"] == (1, data)
    assert uploads.pieces == [(0, 4096), (4096, 4096), (8192, 10_000 - 8192)]
    assert seen == [(0, 10_000), (4096, 10_000), (8192, 10_000), (10_000, 10_000)]

    [begin] = [pb.BeginUploadRequest.FromString(e.payload) for e in server.envelopes(CALL, Methods.BEGIN_UPLOAD)]
    assert (begin.name, begin.size, begin.sha256, begin.enable) == ("news", 10_000, hashlib.sha256(data).digest(), True)
    assert begin.signer_key == b""  # not signed
    assert [e.method.rsplit("/", 1)[1] for e in server.envelopes(CALL)] == [
        "BeginUpload", "UploadChunk", "UploadChunk", "UploadChunk", "CommitUpload",
    ]

    # Again, under another name: a new catalog; and under the same name: a replacement.
    assert client.push_catalog(str(catalog_file), "other").catalog.version == 1
    again = client.push_catalog(catalog_file)
    assert again.catalog.version == 2 and again.replaced


def test_push_resumes_an_upload_a_killed_push_left(server, client, uploads, catalog_file):
    data = catalog_file.read_bytes()
    # An earlier push (another process) began and sent 3000 bytes before it died.
    status = client.begin_upload("news", len(data), hashlib.sha256(data).hexdigest())
    assert not status.resumed and status.offset == 0
    assert client.upload_chunk(status.upload_id, 0, data[:3000]).offset == 3000
    uploads.pieces.clear()

    seen = []
    reply = client.push_catalog(catalog_file, chunk_size=4096, progress=lambda *a: seen.append(a))
    assert reply.catalog.version == 1
    assert seen[0] == (3000, 10_000) and seen[-1] == (10_000, 10_000)
    assert uploads.pieces[0][0] == 3000
    assert sum(length for _, length in uploads.pieces) == 10_000 - 3000  # nothing sent twice
    assert uploads.installed["news"] == (1, data)


def test_a_push_stopped_by_its_progress_callback_resumes(client, uploads, catalog_file):
    class Stop(Exception):
        pass

    def stop_after_first_piece(sent, total):
        if sent > 0:
            raise Stop

    with pytest.raises(Stop):
        client.push_catalog(catalog_file, chunk_size=2500, progress=stop_after_first_piece)
    [left] = uploads.uploads.values()
    assert len(left["data"]) == 2500

    seen = []
    assert client.push_catalog(catalog_file, chunk_size=2500, progress=lambda *a: seen.append(a)).catalog.version == 1
    assert seen == [(2500, 10_000), (5000, 10_000), (7500, 10_000), (10_000, 10_000)]
    assert not uploads.uploads


def test_push_goes_on_from_get_upload_after_out_of_range(server, client, uploads, catalog_file):
    data = catalog_file.read_bytes()
    # The daemon lost the tail of what it held (say, it restarted): the next piece is refused.
    status = client.begin_upload("news", len(data), hashlib.sha256(data).digest())
    client.upload_chunk(status.upload_id, 0, data[:6000])
    uploads.refuse_next_piece_with = (StatusCode.OUT_OF_RANGE, "send from offset 1000", 1000)
    uploads.pieces.clear()

    seen = []
    reply = client.push_catalog(catalog_file, chunk_size=4096, progress=lambda *a: seen.append(a))
    assert reply.catalog.version == 1 and uploads.installed["news"] == (1, data)
    assert seen[0] == (6000, 10_000)
    assert [offset for offset, _ in uploads.pieces] == [6000, 1000, 5096, 9192]
    assert server.calls_of(Methods.GET_UPLOAD) == 1


def test_out_of_range_that_get_upload_cannot_explain_is_raised(client, uploads, catalog_file):
    uploads.refuse_next_piece_with = (StatusCode.OUT_OF_RANGE, "passes the declared size", None)
    with pytest.raises(RpcError) as info:
        client.push_catalog(catalog_file)
    assert info.value.code == StatusCode.OUT_OF_RANGE
    assert info.value.method == Methods.UPLOAD_CHUNK


def test_push_raises_refusals(server, client, uploads, catalog_file):
    uploads.refuse_next_piece_with = (StatusCode.RESOURCE_EXHAUSTED, "disk full", None)
    with pytest.raises(RpcError) as info:
        client.push_catalog(catalog_file)
    assert info.value.code == StatusCode.RESOURCE_EXHAUSTED

    server.handlers[Methods.COMMIT_UPLOAD] = lambda env: fail(StatusCode.DATA_LOSS, "SHA-256 mismatch")
    with pytest.raises(RpcError) as info:
        client.push_catalog(catalog_file)
    assert info.value.code == StatusCode.DATA_LOSS and info.value.method == Methods.COMMIT_UPLOAD

    server.handlers[Methods.BEGIN_UPLOAD] = lambda env: fail(StatusCode.PERMISSION_DENIED, "not an admin")
    with pytest.raises(RpcError) as info:
        client.push_catalog(catalog_file)
    assert info.value.code == StatusCode.PERMISSION_DENIED
    assert server.calls_of(Methods.BEGIN_UPLOAD) == 3


def test_a_signed_catalog_declares_its_author(server, client, uploads, tmp_path):
    key, signature = os.urandom(32), os.urandom(64)
    path = tmp_path / "signed.earcat"
    path.write_bytes(os.urandom(5000) + b"EARSIG01" + key + signature)
    client.push_catalog(path)
    [begin] = [pb.BeginUploadRequest.FromString(e.payload) for e in server.envelopes(CALL, Methods.BEGIN_UPLOAD)]
    assert begin.signer_key == key and begin.name == "signed" and begin.size == 5104

    assert catalog_signer_key(path.read_bytes()) == key
    assert catalog_signer_key(b"EARSIG01" + key) is None  # too short for a trailer
    assert catalog_signer_key(os.urandom(200)[:96] + b"EARSIG02" + key + signature) is None


def test_begin_upload_checks_its_arguments(client):
    with pytest.raises(ValueError):
        client.begin_upload("news", 10, b"short")
    with pytest.raises(ValueError):
        client.begin_upload("news", 10, "not hex")


def test_push_checks_its_arguments(client, catalog_file, tmp_path):
    for size in (0, -1, 5 << 20, 1.5):
        with pytest.raises(ValueError):
            client.push_catalog(catalog_file, chunk_size=size)
    with pytest.raises(FileNotFoundError):
        client.push_catalog(tmp_path / "missing.earcat")


def test_default_catalog_names():
    assert catalog_name_of("/x/show.v2.earcat") == "show.v2"
    assert catalog_name_of("news.earcat") == "news"
    assert catalog_name_of("plain.bin") == "plain.bin"

