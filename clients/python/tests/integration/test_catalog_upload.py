"""Catalog management and the resumable upload (push) against the real earshotd.

These run on a daemon of their own (plain mode, so the client is an admin; no follow session),
so the catalogs they install and remove never meet the other modules' matches or listings.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest
from zmq.utils import z85

from daemon_env import run_earshotd

from earshot_client import Client, RpcError, StatusCode, pb

pytestmark = pytest.mark.integration


QUIET_SESSION = "prepare_on_start = false\nfollow = false"  # no matching: these tests need none


@pytest.fixture(scope="module")
def catalog_daemon(tmp_path_factory):
    with run_earshotd(tmp_path_factory.mktemp("earshotd-catalogs"), session=QUIET_SESSION) as d:
        yield d


@pytest.fixture
def admin(catalog_daemon):
    with Client(catalog_daemon.rpc, timeout=10.0) as c:
        yield c
    catalog_daemon.check_alive()


@pytest.fixture
def catalog_bytes():
    with open(os.environ["EARSHOT_TEST_CATALOG"], "rb") as f:
        return f.read()


@pytest.fixture
def catalog_copy(tmp_path):
    """The test catalog under another file name (so it installs as another catalog)."""
    path = tmp_path / "py-pushed.earcat"
    shutil.copy(os.environ["EARSHOT_TEST_CATALOG"], path)
    return path


def names(client):
    return {c.name: c for c in client.list_catalogs().catalogs}


def test_push_installs_then_replaces(admin, catalog_daemon, catalog_copy, catalog_bytes):
    digest = hashlib.sha256(catalog_bytes).hexdigest()
    seen = []
    reply = admin.push_catalog(catalog_copy, progress=lambda *a: seen.append(a))
    assert reply.catalog.name == "py-pushed" and reply.catalog.version == 1 and not reply.replaced
    assert reply.catalog.sha256 == digest
    assert reply.install_milliseconds >= 0
    assert seen[0] == (0, len(catalog_bytes)) and seen[-1] == (len(catalog_bytes), len(catalog_bytes))

    listed = names(admin)
    assert set(listed) == {catalog_daemon.catalog, "py-pushed"}
    pushed = listed["py-pushed"]
    assert pushed.version == 1 and pushed.sha256 == digest
    assert pushed.byte_count == len(catalog_bytes)
    assert pushed.reference_count == listed[catalog_daemon.catalog].reference_count
    # A new name without enable=True is installed but not searched.
    assert not pushed.enabled and not pushed.active
    assert pushed.state == pb.CATALOG_STATE_DISABLED
    assert (catalog_daemon.state_directory / "catalogs" / "py-pushed.earcat").read_bytes() == catalog_bytes

    # The same bytes again under the same name: a new version that replaces the first.
    again = admin.push_catalog(catalog_copy)
    assert again.catalog.version == 2 and again.replaced
    assert again.catalog.sha256 == digest
    assert names(admin)["py-pushed"].version == 2
    assert not admin.list_catalogs().uploads

    admin.remove_catalog("py-pushed")


def test_enable_disable_describe_remove(admin, catalog_daemon, catalog_copy):
    reply = admin.push_catalog(catalog_copy, "py-managed", enable=True)
    assert reply.catalog.enabled and reply.catalog.active and reply.catalog.state == pb.CATALOG_STATE_ACTIVE

    disabled = admin.disable_catalog("py-managed")
    assert disabled.name == "py-managed" and not disabled.enabled and not disabled.active
    assert disabled.state == pb.CATALOG_STATE_DISABLED
    assert not names(admin)["py-managed"].enabled
    enabled = admin.enable_catalog("py-managed")
    assert enabled.enabled and enabled.active and enabled.state == pb.CATALOG_STATE_ACTIVE

    description = admin.describe_catalog("py-managed")
    original = admin.describe_catalog(catalog_daemon.catalog)
    assert len(description.references) == len(original.references) >= 1

    removed = admin.remove_catalog("py-managed").removed
    assert removed.name == "py-managed" and removed.version == 1
    assert "py-managed" not in names(admin)
    assert not (catalog_daemon.state_directory / "catalogs" / "py-managed.earcat").exists()
    with pytest.raises(RpcError) as info:
        admin.describe_catalog("py-managed")
    assert info.value.code == StatusCode.NOT_FOUND


@pytest.mark.parametrize("call", ["enable_catalog", "disable_catalog", "remove_catalog", "describe_catalog"])
def test_unknown_catalog_is_not_found(admin, call):
    with pytest.raises(RpcError) as info:
        getattr(admin, call)("no-such-catalog")
    assert info.value.code == StatusCode.NOT_FOUND, info.value


def test_an_interrupted_push_resumes_where_it_stopped(admin, catalog_copy, catalog_bytes):
    size = len(catalog_bytes)
    digest = hashlib.sha256(catalog_bytes).digest()
    # A push that began and sent one piece, then died.
    begun = admin.begin_upload("py-resumed", size, digest)
    assert not begun.resumed and begun.offset == 0 and begun.size == size
    assert begun.sha256 == digest.hex() and begun.name == "py-resumed"
    first = min(2000, size - 1)
    assert admin.upload_chunk(begun.upload_id, 0, catalog_bytes[:first]).offset == first
    [pending] = [u for u in admin.list_catalogs().uploads if u.name == "py-resumed"]
    assert pending.upload_id == begun.upload_id and pending.offset == first

    seen = []
    reply = admin.push_catalog(catalog_copy, "py-resumed", chunk_size=1024, progress=lambda *a: seen.append(a))
    assert seen[0] == (first, size), "the push did not resume from the bytes already held"
    assert seen[-1] == (size, size)
    # Only what was missing was sent: one progress call per 1 KiB piece after the first.
    assert len(seen) == 1 + -(-(size - first) // 1024)
    assert reply.catalog.version == 1 and reply.catalog.sha256 == digest.hex()
    assert not [u for u in admin.list_catalogs().uploads if u.name == "py-resumed"]
    with pytest.raises(RpcError) as info:
        admin.get_upload(begun.upload_id)
    assert info.value.code == StatusCode.NOT_FOUND

    admin.remove_catalog("py-resumed")


def test_a_push_stopped_midway_by_its_callback_resumes(admin, catalog_copy, catalog_bytes):
    class Stop(Exception):
        pass

    def stop_after_a_piece(sent, total):
        if sent > 0:
            raise Stop

    with pytest.raises(Stop):
        admin.push_catalog(catalog_copy, "py-stopped", chunk_size=1500, progress=stop_after_a_piece)
    [pending] = [u for u in admin.list_catalogs().uploads if u.name == "py-stopped"]
    assert pending.offset == 1500

    seen = []
    assert admin.push_catalog(catalog_copy, "py-stopped", chunk_size=1500, progress=lambda *a: seen.append(a))
    assert seen[0] == (1500, len(catalog_bytes))
    admin.remove_catalog("py-stopped")


def test_out_of_range_get_upload_and_abort(admin, catalog_bytes):
    digest = hashlib.sha256(catalog_bytes).digest()
    begun = admin.begin_upload("py-aborted", len(catalog_bytes), digest)
    with pytest.raises(RpcError) as info:
        admin.upload_chunk(begun.upload_id, 1000, catalog_bytes[1000:2000])  # a hole: nothing is held
    assert info.value.code == StatusCode.OUT_OF_RANGE
    assert admin.get_upload(begun.upload_id).offset == 0
    # A piece already held is acknowledged again, not written twice.
    assert admin.upload_chunk(begun.upload_id, 0, catalog_bytes[:1000]).offset == 1000
    assert admin.upload_chunk(begun.upload_id, 0, catalog_bytes[:500]).offset == 1000
    assert admin.upload_chunk(begun.upload_id, 500, catalog_bytes[500:1500]).offset == 1500
    # Committing with bytes missing is refused; the upload stays.
    with pytest.raises(RpcError) as info:
        admin.commit_upload(begun.upload_id)
    assert info.value.code == StatusCode.FAILED_PRECONDITION
    aborted = admin.abort_upload(begun.upload_id)
    assert aborted.upload_id == begun.upload_id and aborted.offset == 1500
    for call in (admin.get_upload, admin.commit_upload, admin.abort_upload):
        with pytest.raises(RpcError) as info:
            call(begun.upload_id)
        assert info.value.code == StatusCode.NOT_FOUND
    assert "py-aborted" not in names(admin)


def test_wrong_sha256_is_data_loss(admin, catalog_bytes):
    wrong = hashlib.sha256(catalog_bytes + b"!").digest()
    begun = admin.begin_upload("py-corrupt", len(catalog_bytes), wrong)
    assert admin.upload_chunk(begun.upload_id, 0, catalog_bytes).offset == len(catalog_bytes)
    with pytest.raises(RpcError) as info:
        admin.commit_upload(begun.upload_id)
    assert info.value.code == StatusCode.DATA_LOSS, info.value
    # The refused file is gone: nothing installed, nothing to resume.
    assert "py-corrupt" not in names(admin)
    with pytest.raises(RpcError) as info:
        admin.get_upload(begun.upload_id)
    assert info.value.code == StatusCode.NOT_FOUND


def test_a_file_that_is_not_a_catalog_is_refused(admin, tmp_path):
    path = tmp_path / "py-garbage.earcat"
    path.write_bytes(os.urandom(4096))
    with pytest.raises(RpcError) as info:
        admin.push_catalog(path)
    assert info.value.code == StatusCode.INVALID_ARGUMENT, info.value
    assert "py-garbage" not in names(admin)


def test_begin_refusals(admin, catalog_bytes):
    digest = hashlib.sha256(catalog_bytes).digest()
    with pytest.raises(RpcError) as info:
        admin.begin_upload("../escape", len(catalog_bytes), digest)
    assert info.value.code == StatusCode.INVALID_ARGUMENT
    with pytest.raises(RpcError) as info:
        admin.begin_upload("py-huge", 1 << 40, digest)
    assert info.value.code == StatusCode.RESOURCE_EXHAUSTED
    assert not [u for u in admin.list_catalogs().uploads if u.name in ("py-huge", "../escape")]


def test_list_carries_the_catalog_topic_position(admin):
    listing = admin.list_catalogs()
    assert listing.epoch != 0
    assert [c.name for c in admin.catalogs()] == [c.name for c in listing.catalogs]


@pytest.fixture(scope="module")
def signed_only_daemon(tmp_path_factory):
    """A daemon that accepts only catalogs signed by one trusted author (a random key here: the
    tests make no valid signature, they check where each refusal happens)."""
    root = tmp_path_factory.mktemp("earshotd-signed-only")
    author = os.urandom(32)
    (root / "authors").write_text(f"{z85.encode(author).decode()} py-author\n")
    with run_earshotd(
        root,
        session=QUIET_SESSION,
        extra=f"[catalogs]\ntrusted_authors = {json.dumps(str(root / 'authors'))}",
    ) as d:
        yield d, author


def test_trusted_authors_refuse_before_or_after_the_transfer(signed_only_daemon, tmp_path, catalog_bytes):
    daemon, author = signed_only_daemon
    with Client(daemon.rpc, timeout=10.0) as admin:
        # Signed by someone else: the key in the trailer is declared, so BeginUpload refuses and
        # no byte is sent.
        stranger = tmp_path / "py-stranger.earcat"
        stranger.write_bytes(catalog_bytes + b"EARSIG01" + os.urandom(32 + 64))
        seen = []
        with pytest.raises(RpcError) as info:
            admin.push_catalog(stranger, progress=lambda *a: seen.append(a))
        assert info.value.code == StatusCode.PERMISSION_DENIED and info.value.method.endswith("/BeginUpload")
        assert seen == [] and not admin.list_catalogs().uploads

        # Unsigned: no signer to declare, so BeginUpload refuses it too, before any byte.
        unsigned = tmp_path / "py-unsigned.earcat"
        unsigned.write_bytes(catalog_bytes)
        with pytest.raises(RpcError) as info:
            admin.push_catalog(unsigned, progress=lambda *a: seen.append(a))
        assert info.value.code == StatusCode.PERMISSION_DENIED and info.value.method.endswith("/BeginUpload")
        assert "unsigned" in info.value.message
        assert seen == [] and not admin.list_catalogs().uploads

        # The trusted author's key with a signature that does not verify.
        forged = tmp_path / "py-forged.earcat"
        forged.write_bytes(catalog_bytes + b"EARSIG01" + author + os.urandom(64))
        with pytest.raises(RpcError) as info:
            admin.push_catalog(forged)
        assert info.value.code == StatusCode.INVALID_ARGUMENT and info.value.method.endswith("/CommitUpload")

        assert not {"py-stranger", "py-unsigned", "py-forged"} & set(names(admin))
        assert not admin.list_catalogs().uploads
