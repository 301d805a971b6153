import threading

from gateway.security.secret_file import ensure_secret_file, fingerprint, secret_matches


def test_processes_starting_at_once_agree_on_one_secret(tmp_path):
    path, barrier, got = tmp_path / "data" / "metrics_token", threading.Barrier(8), []

    def start() -> None:
        barrier.wait()
        got.append(ensure_secret_file(path, "tgm-"))

    threads = [threading.Thread(target=start) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(got)) == 1 and got[0] == path.read_text().strip()
    assert [p.name for p in path.parent.iterdir()] == ["metrics_token"]  # no drafts left behind


def test_compare_and_fingerprint():
    assert secret_matches("s" * 32, "s" * 32) and not secret_matches("", "")
    assert fingerprint("a" * 32) == fingerprint("a" * 32) != fingerprint("b" * 32)
