#!/usr/bin/python3
"""A session-bus app for test_bus_calls.py (SPEC §14): owns org.example.BusApp on $DBUS_SESSION_BUS_ADDRESS
and answers org.example.BusApp.Ping() with "pong" — as a GTK app answers org.freedesktop.Application.
Debian's python3-dbus and python3-gi (scripts/install-deps.sh)."""

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

DBusGMainLoop(set_as_default=True)
bus = dbus.SessionBus()


class App(dbus.service.Object):
    @dbus.service.method("org.example.BusApp", in_signature="", out_signature="s")
    def Ping(self):
        return "pong"


name = dbus.service.BusName("org.example.BusApp", bus)
App(bus, "/org/example/BusApp")
GLib.MainLoop().run()
