extension ManagerWire.ListAppsReply {
    /// An app not running, with no assertion, takes ~450 bytes (4,473,927 for 10,009 apps); a running
    /// one with assertions more, and the buffer then grows as usual past the hint.
    public var encodedSizeHint: Int { apps.count * 480 }
}
