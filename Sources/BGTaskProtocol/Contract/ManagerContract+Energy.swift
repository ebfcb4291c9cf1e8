// SPEC §16: the energy fields of `io.bgtaskd.Manager`.
extension ManagerWire {
    /// `type AppEnergy`: what the app's background work cost, since accounting began (kept across daemon
    /// restarts) and over the last 24 hours. `wakes`/`wakes24h`: background wakes by cause (`task`,
    /// `remote-notification`, `bus-call`, `lock`, `user`).
    public struct AppEnergy: WireMessage {
        public static let fields = ["backgroundCPUUSec", "backgroundCPU24hUSec", "wakes", "wakes24h"]
        public var backgroundCPUUSec: Int64
        public var backgroundCPU24hUSec: Int64
        public var wakes: [String: Int64]
        public var wakes24h: [String: Int64]

        public init(backgroundCPUUSec: Int64, backgroundCPU24hUSec: Int64, wakes: [String: Int64], wakes24h: [String: Int64]) {
            self.backgroundCPUUSec = backgroundCPUUSec
            self.backgroundCPU24hUSec = backgroundCPU24hUSec
            self.wakes = wakes
            self.wakes24h = wakes24h
        }

        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            backgroundCPUUSec = try r.int("backgroundCPUUSec")
            backgroundCPU24hUSec = try r.int("backgroundCPU24hUSec")
            wakes = try Self.counts(r.optionalObject("wakes"), "wakes")
            wakes24h = try Self.counts(r.optionalObject("wakes24h"), "wakes24h")
        }

        static func counts(_ json: JSON?, _ field: String) throws(WireFieldError) -> [String: Int64] {
            guard let json else { return [:] }
            guard let o = json.objectValue else { throw WireFieldError(field) }
            var out: [String: Int64] = [:]
            for (k, v) in o {
                guard let n = v.intValue else { throw WireFieldError(field) }
                out[k] = n
            }
            return out
        }

        public var json: [String: JSON] {
            [
                "backgroundCPUUSec": .int(backgroundCPUUSec), "backgroundCPU24hUSec": .int(backgroundCPU24hUSec),
                "wakes": .object(wakes.mapValues { .int($0) }), "wakes24h": .object(wakes24h.mapValues { .int($0) }),
            ]
        }

        /// Every wake, whatever its cause (since accounting began).
        public var totalWakes: Int64 { wakes.values.reduce(0, +) }
        /// Every wake over the last 24 hours.
        public var totalWakes24h: Int64 { wakes24h.values.reduce(0, +) }
    }
}
