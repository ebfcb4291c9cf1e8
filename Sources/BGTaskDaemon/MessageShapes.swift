import Synchronization

/// The shapes of decision messages, shared by every app's ``DecisionHistory``: a message with its app's
/// identifier and its numbers taken out ("granted background task # (bench) to @"). Ten thousand apps'
/// histories hold a handful of shapes, each once; a record names its shape by number.
///
/// Bounded: at most ``maxShapes`` shapes of at most ``maxShapeBytes`` bytes each are kept (for the
/// daemon's life: a shape is never dropped); a history stores any other shape in its own record.
final class MessageShapes: Sendable {
    static let shared = MessageShapes()
    static let maxShapes = 4096
    static let maxShapeBytes = 192

    private struct Table {
        var numbers: [[UInt8]: Int] = [:]
        var shapes: [[UInt8]] = []
        /// The two shapes asked for last (a Begin/End client alternates two): compared before hashing.
        var recent: (Int, Int) = (-1, -1)
    }

    private let table = Mutex(Table())

    /// The shape's number, adding it if there is room; nil: kept in the record instead.
    func number(of shape: [UInt8]) -> Int? {
        guard shape.count <= Self.maxShapeBytes else { return nil }
        return table.withLock { t in
            if t.recent.0 >= 0, t.shapes[t.recent.0] == shape { return t.recent.0 }
            if t.recent.1 >= 0, t.shapes[t.recent.1] == shape {
                t.recent = (t.recent.1, t.recent.0)
                return t.recent.0
            }
            if let n = t.numbers[shape] {
                t.recent = (n, t.recent.0)
                return n
            }
            guard t.shapes.count < Self.maxShapes else { return nil }
            t.shapes.append(shape)
            t.numbers[shape] = t.shapes.count - 1
            return t.shapes.count - 1
        }
    }

    /// The shape numbered `number` (empty if there is none: a record never names one that is not kept).
    func shape(_ number: Int) -> [UInt8] {
        table.withLock { t in number >= 0 && number < t.shapes.count ? t.shapes[number] : [] }
    }

    /// Shapes kept (for the memory probe).
    var count: Int { table.withLock { $0.shapes.count } }
}
