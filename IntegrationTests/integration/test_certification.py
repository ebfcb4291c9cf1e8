"""The project's Varlink layer against the reference conformance suite of the Python `varlink` package."""

import subprocess
import sys

import pytest
import varlink

from support import RawClient

CERT = "org.varlink.certification"


def test_reference_client_certifies_our_server(cert_server):
    run = subprocess.run(
        [sys.executable, "-m", "varlink.tests.test_certification", "--client", f"--varlink=unix:{cert_server}"],
        capture_output=True, text=True, timeout=30,
    )
    assert run.returncode == 0, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    assert "Certification passed" in run.stdout, run.stdout
    # Test10 streamed ten replies, each on its own line of the client's log.
    assert run.stdout.count("Test10:") == 10, run.stdout


def _error(excinfo) -> tuple[str, dict]:
    e = excinfo.value
    return e.error(), e.parameters()


def test_out_of_order_and_wrong_values_are_certification_errors(cert_server):
    """What the reference suite's own unit test (TestService.test_01) expects of a server."""
    with varlink.Client.new_with_address(f"unix:{cert_server}") as client, client.open(CERT) as con:
        client_id = con.Start()["client_id"]
        assert len(client_id) == 32
        assert con.Test01(client_id) == {"bool": True}
        assert con.Test02(client_id, True) == {"int": 1}
        # A missing parameter, as the reference server's generic layer reports it.
        with pytest.raises(varlink.VarlinkError) as e:
            con.Test03("test")
        assert _error(e) == ("org.varlink.service.InvalidParameter", {"parameter": "int"})
        # An unknown client id.
        with pytest.raises(varlink.VarlinkError) as e:
            con.Test03("test", 1)
        name, params = _error(e)
        assert name == f"{CERT}.CertificationError"
        assert params["wants"] == {"method": f"{CERT}.Start+++"}
        # A wrong value: the client id is forgotten afterwards.
        with pytest.raises(varlink.VarlinkError) as e:
            con.Test03(client_id, 0)
        name, params = _error(e)
        assert name == f"{CERT}.CertificationError"
        assert params["wants"]["parameters"] == {"client_id": client_id, "int": 1}
        assert params["got"]["parameters"] == {"client_id": client_id, "int": 0}
        with pytest.raises(varlink.VarlinkError):
            con.Test03(client_id, 1)
        # Out of order: reported, and the id stays valid.
        client_id = con.Start()["client_id"]
        con.Test01(client_id)
        con.Test02(client_id, True)
        with pytest.raises(varlink.VarlinkError) as e:
            con.Test01(client_id)
        name, params = _error(e)
        assert name == f"{CERT}.CertificationError"
        assert params == {"wants": f"Call to method {CERT}.Test03", "got": f"Call to method {CERT}.Test01"}
        assert con.Test03(client_id, 1) == {"float": 1.0}


def test_generic_checks_of_the_cert_server(cert_server):
    with RawClient(cert_server) as c:
        r = c.call(f"{CERT}.Test01", {"client_id": "x", "bogus": 1})
        assert r["error"] == "org.varlink.service.InvalidParameter" and r["parameters"] == {"parameter": "bogus"}
        r = c.call(f"{CERT}.Test02", {"client_id": "x", "bool": "yes"})
        assert r["error"] == "org.varlink.service.InvalidParameter" and r["parameters"] == {"parameter": "bool"}
        r = c.call(f"{CERT}.NoSuchTest")
        assert r["error"] == "org.varlink.service.MethodNotFound"
        # Test10 streams, so it wants `more`.
        r = c.call(f"{CERT}.Test10", {"client_id": "x", "mytype": {}})
        assert r["error"] == "org.varlink.service.ExpectedMore"
        # Still in step after errors: a whole run on the same connection.
        cid = c.call(f"{CERT}.Start")["parameters"]["client_id"]
        assert c.call(f"{CERT}.End", {"client_id": cid})["error"] == f"{CERT}.CertificationError"
