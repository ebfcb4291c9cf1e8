import Testing
@testable import BGTaskDaemon

/// The shared shape table: a shape keeps its number whichever way it is found (the two asked for last are
/// compared before the table is hashed).
@Suite struct MessageShapesTests {
    @Test func aShapeKeepsItsNumberInAnyOrderOfQuestions() {
        let shapes = MessageShapes()
        let a = Array("granted background task # to \u{1}".utf8)
        let b = Array("ended background task # of \u{1}".utf8)
        let c = Array("denied \u{1}".utf8)
        let na = shapes.number(of: a), nb = shapes.number(of: b), nc = shapes.number(of: c)
        #expect(na == 0 && nb == 1 && nc == 2)
        for (shape, number) in [(a, na), (b, nb), (a, na), (a, na), (c, nc), (b, nb), (c, nc), (a, na), (b, nb)] {
            #expect(shapes.number(of: shape) == number)
        }
        // A shape one byte longer or shorter than a recent one is another shape.
        #expect(shapes.number(of: a + [0x20]) == 3)
        #expect(shapes.number(of: Array(b.dropLast())) == 4)
        #expect(shapes.count == 5)
        #expect(shapes.shape(1) == b)
    }
}
