import BGTaskCore

/// The requests (the daemon's: `VarlinkRequest`) fed to the core and not yet answered, by the ID its
/// `.reply` echoes.
///
/// Nearly every request is opened, answered and closed within one feed, one at a time: the newest is kept
/// in a slot of its own and found by comparing its ID, the rest (a launch's reply that waits, a request
/// opened while another is) in a dictionary. Each call looked its request up four times, ~1,700
/// instructions of a Begin or End in the dictionary alone (callgrind).
struct OpenRequests<Request> {
    private var newestID: RequestID?
    private var newest: Request?
    private var rest: [RequestID: Request] = [:]

    subscript(id: RequestID) -> Request? {
        get { id == newestID ? newest : (rest.isEmpty ? nil : rest[id]) }
        set {
            if id == newestID {
                if let newValue {
                    newest = newValue
                } else {
                    newestID = nil
                    newest = nil
                }
            } else if let newValue {
                if !rest.isEmpty, rest[id] != nil {
                    rest[id] = newValue
                    return
                }
                if let newestID, let newest { rest[newestID] = newest }
                newestID = id
                newest = newValue
            } else if !rest.isEmpty {
                rest[id] = nil
            }
        }
    }

    @discardableResult
    mutating func removeValue(forKey id: RequestID) -> Request? {
        if id == newestID {
            let request = newest
            newestID = nil
            newest = nil
            return request
        }
        return rest.isEmpty ? nil : rest.removeValue(forKey: id)
    }

    /// Requests open (OpenRequestsTests compares it with a dictionary's).
    var count: Int { rest.count + (newestID == nil ? 0 : 1) }
}
