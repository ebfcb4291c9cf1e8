"""bgtaskd's Varlink interfaces as the independent Python `varlink` client sees them."""

import pytest
import varlink
from varlink.scanner import _Error, _Method

from support import RawClient

OURS = ("io.bgtaskd.App", "io.bgtaskd.Manager")


@pytest.fixture
def client(bgtaskd):
    with varlink.Client.new_with_address(f"unix:{bgtaskd.socket}") as c:
        yield c


def describe(client, name) -> str:
    with client.open("org.varlink.service") as con:
        return con.GetInterfaceDescription(name)["description"]


def test_get_info_lists_our_interfaces(client):
    with client.open("org.varlink.service") as con:
        info = con.GetInfo()
    assert set(OURS) <= set(info["interfaces"]), info
    assert "org.varlink.service" in info["interfaces"]
    assert info["vendor"] and info["product"] and info["version"]


@pytest.mark.parametrize("name", OURS)
def test_interface_description_parses(client, name):
    text = describe(client, name)
    interface = varlink.Interface(text)
    assert interface.name == name
    methods = {n for n, m in interface.members.items() if isinstance(m, _Method)}
    errors = {n for n, m in interface.members.items() if isinstance(m, _Error)}
    # A few names SPEC §10 makes public.
    if name == "io.bgtaskd.App":
        assert {"CheckIn", "Acknowledge", "BeginBackgroundTask", "EndBackgroundTask"} <= methods
        assert {"NoSuchApp", "PermissionDenied", "NotCheckedIn"} <= errors
    else:
        assert {"ListApps", "GetApp", "Monitor", "Launch", "Reload"} <= methods
        assert {"NoSuchApp", "PermissionDenied"} <= errors
    # The client can open it, which fetches and parses the same text.
    with client.open(name) as con:
        assert hasattr(con, sorted(methods)[0])


def test_unknown_interface(client):
    with client.open("org.varlink.service") as con:
        with pytest.raises(varlink.VarlinkError) as e:
            con.GetInterfaceDescription("org.example.NoSuchInterface")
    assert e.value.error() == "org.varlink.service.InterfaceNotFound"
    assert e.value.parameters() == {"interface": "org.example.NoSuchInterface"}


def test_unknown_interface_in_a_call(bgtaskd):
    with RawClient(bgtaskd.socket) as c:
        r = c.call("org.example.NoSuchInterface.Frob")
    assert r["error"] == "org.varlink.service.InterfaceNotFound", r


def test_unknown_method(bgtaskd):
    with RawClient(bgtaskd.socket) as c:
        for method in ("io.bgtaskd.Manager.NoSuchMethodXyz", "io.bgtaskd.App.NoSuchMethodXyz",
                       "org.varlink.service.NoSuchMethodXyz"):
            r = c.call(method)
            assert r["error"] == "org.varlink.service.MethodNotFound", r
            assert r["parameters"]["method"].endswith("NoSuchMethodXyz"), r


def test_list_apps_is_answered_or_not_implemented_yet(bgtaskd):
    with RawClient(bgtaskd.socket) as c:
        r = c.call("io.bgtaskd.Manager.ListApps")
    if "error" in r:
        assert r["error"] == "org.varlink.service.MethodNotImplemented", r
        assert r["parameters"]["method"].endswith("ListApps"), r
    else:
        assert isinstance(r["parameters"]["apps"], list), r


def test_every_declared_method_is_found(client, bgtaskd):
    """Each method the IDL declares is dispatched: called without parameters it gets a reply or a
    declared or standard error (InvalidParameter, MethodNotImplemented, …), never MethodNotFound."""
    for name in OURS:
        interface = varlink.Interface(describe(client, name))
        declared_errors = {f"{name}.{n}" for n, m in interface.members.items() if isinstance(m, _Error)}
        for method in sorted(n for n, m in interface.members.items() if isinstance(m, _Method)):
            # A fresh connection each: a call that streams or holds state must not affect the next.
            with RawClient(bgtaskd.socket) as c:
                r = c.call(f"{name}.{method}", timeout=2.0)
            if "error" in r:
                assert r["error"] != "org.varlink.service.MethodNotFound", r
                assert r["error"].startswith("org.varlink.service.") or r["error"] in declared_errors, \
                    f"{name}.{method}: undeclared error {r}"
            else:
                assert isinstance(r.get("parameters", {}), dict), r
    assert bgtaskd.alive()
