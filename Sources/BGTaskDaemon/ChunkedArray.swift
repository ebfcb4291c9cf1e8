/// An append-only sequence kept in blocks of a fixed capacity, each allocated whole when the previous one is
/// full. An array that grows by doubling copies itself at each step and leaves its old buffer behind in the
/// heap, where the allocator keeps it (a large array held about twice its capacity in resident memory);
/// blocks are never copied, and a dropped sequence frees blocks of one size, which the next one reuses.
struct ChunkedArray<Element>: Sequence {
    private var chunks: [[Element]] = []
    /// Elements per block.
    let chunkSize: Int
    private(set) var count = 0

    init(chunkSize: Int) { self.chunkSize = Swift.max(1, chunkSize) }

    /// Elements the allocated blocks can hold.
    var capacity: Int { chunks.count * chunkSize }

    mutating func append(_ element: Element) {
        if chunks.isEmpty || chunks[chunks.count - 1].count == chunkSize {
            var chunk: [Element] = []
            chunk.reserveCapacity(chunkSize)
            chunks.append(chunk)
        }
        chunks[chunks.count - 1].append(element)
        count += 1
    }

    mutating func append(contentsOf elements: some Sequence<Element>) {
        for e in elements { append(e) }
    }

    func makeIterator() -> FlattenSequence<[[Element]]>.Iterator { chunks.joined().makeIterator() }
}

extension ChunkedArray: Sendable where Element: Sendable {}
