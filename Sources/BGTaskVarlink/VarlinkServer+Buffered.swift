extension VarlinkServer {
    /// Bytes of replies answered but not yet taken by their peers, over every connection. On `queue`.
    public var bufferedReplyBytes: Int { connections.values.reduce(0) { $0 + $1.bufferedReplyBytes } }
}
