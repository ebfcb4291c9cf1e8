#!/usr/bin/python3
"""The part of systemd's manager that systemd-logind asks before a suspend, on a private system bus
(test_system_sleep.py): suspend.target is `loaded`, and StartUnit is refused, so no sleep happens. With
it a real logind, asked to Suspend, goes through its real sequence: PrepareForSleep(true), the delay
inhibitors, StartUnit (refused here), PrepareForSleep(false). Debian's python3-dbus; prints `ready`."""

import sys

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(sys.argv[1])


class Unit(dbus.service.Object):
    @dbus.service.method("org.freedesktop.DBus.Properties", in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        if name == "LoadState":
            return dbus.String("loaded", variant_level=1)
        raise dbus.exceptions.DBusException("no such property", name="org.freedesktop.DBus.Error.UnknownProperty")


class Manager(dbus.service.Object):
    @dbus.service.method("org.freedesktop.systemd1.Manager", in_signature="ss", out_signature="o")
    def StartUnit(self, name, mode):
        print(f"StartUnit {name} {mode}: refused", flush=True)
        raise dbus.exceptions.DBusException("this test does not sleep", name="org.freedesktop.DBus.Error.AccessDenied")


name = dbus.service.BusName("org.freedesktop.systemd1", bus)
Unit(bus, "/org/freedesktop/systemd1/unit/suspend_2etarget")
Manager(bus, "/org/freedesktop/systemd1")
print("ready", flush=True)
GLib.MainLoop().run()
