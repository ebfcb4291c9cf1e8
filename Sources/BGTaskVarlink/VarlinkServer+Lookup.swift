extension VarlinkServer {
    /// The open connection with this ID (``VarlinkConnection/id``), nil once it closed.
    public func connection(_ id: UInt64) -> VarlinkConnection? {
        connections[id]
    }
}
