import BGTaskConfig
import Testing

@Suite("systemd.syntax(7) parser")
struct SyntaxTests {
    private func assignments(_ text: String) -> [String] {
        ParsedConfigFile.parse(text, file: "f").assignments.map {
            "\($0.location.line) [\($0.section)] \($0.key)=\($0.value)"
        }
    }

    @Test func sectionsKeysAndWhitespace() {
        let text = """
            [Daemon]
            Socket = /run/x
              FreezerBackend=cgroup   \t
            Empty=
            Inline=a # not a comment
            [Lifecycle]
            Eq=a=b
            """
        #expect(assignments(text) == [
            "2 [Daemon] Socket=/run/x",
            "3 [Daemon] FreezerBackend=cgroup",
            "4 [Daemon] Empty=",
            "5 [Daemon] Inline=a # not a comment",
            "7 [Lifecycle] Eq=a=b",
        ])
        let file = ParsedConfigFile.parse(text, file: "f")
        #expect(file.sections.map(\.name) == ["Daemon", "Lifecycle"])
        #expect(file.sections.map(\.location.line) == [1, 6])
        #expect(file.errors.isEmpty)
    }

    @Test func commentsAndEmptyLines() {
        let text = """
            # comment
            ; another comment
               # indented comment

            [A]
            ;Key=commented
            #Key=commented
            Key=value
            """
        #expect(assignments(text) == ["8 [A] Key=value"])
    }

    @Test func lineContinuation() {
        let text = """
            [A]
            Key=one \\
              two\\
            three
            Next=x
            """
        // The backslash becomes a space and the next line is appended as it is.
        #expect(assignments(text) == ["2 [A] Key=one    two three", "5 [A] Next=x"])
    }

    @Test func commentsInsideContinuationAreSkipped() {
        let text = """
            [A]
            Key=a \\
            # a comment in the middle
            ; and another
              b
            """
        #expect(assignments(text) == ["2 [A] Key=a    b"])
    }

    @Test func emptyLineEndsContinuation() {
        let text = "[A]\nKey=a \\\n\nOther=b\n"
        #expect(assignments(text) == ["2 [A] Key=a", "4 [A] Other=b"])
    }

    @Test func escapedBackslashAtEndIsNotContinuation() {
        let text = "[A]\nKey=a\\\\\nOther=b\n"
        #expect(assignments(text) == ["2 [A] Key=a\\\\", "3 [A] Other=b"])
    }

    @Test func continuationAtEndOfFile() {
        #expect(assignments("[A]\nKey=a \\") == ["2 [A] Key=a"])
    }

    @Test func crlfAndByteOrderMark() {
        let text = "\u{FEFF}[A]\r\nKey=value\r\nOther=x \\\r\ny\r\n"
        #expect(assignments(text) == ["2 [A] Key=value", "3 [A] Other=x  y"])
    }

    @Test func syntaxErrors() {
        let text = """
            [Daemon
            []
            [A]
            just some words
            =value
            [B] trailing
            """
        let file = ParsedConfigFile.parse(text, file: "/etc/bgtaskd/bgtaskd.conf")
        #expect(file.errors.map(\.description) == [
            #"/etc/bgtaskd/bgtaskd.conf:1: invalid section header "[Daemon""#,
            #"/etc/bgtaskd/bgtaskd.conf:2: invalid section header "[]""#,
            #"/etc/bgtaskd/bgtaskd.conf:4: missing '=', not an assignment: "just some words""#,
            "/etc/bgtaskd/bgtaskd.conf:5: missing key name before '='",
            #"/etc/bgtaskd/bgtaskd.conf:6: invalid section header "[B] trailing""#,
        ])
        #expect(file.errors.allSatisfy { $0.key == nil })
    }

    /// issue 15: whitespace is trimmed on the bytes where that is the Character-wise trim, and Character-wise
    /// where a space and a combining mark are one Character (not whitespace), as before.
    @Test func trimmingAroundNonASCII() {
        let text = "[S]\nA=  caf\u{E9}  \nB= \u{301}x\nC=x \u{301}\n  D\u{E9} =\t\u{E9}\t\r\nE=\r\n"
        #expect(assignments(text) == [
            "2 [S] A=caf\u{E9}",
            "3 [S] B= \u{301}x",
            "4 [S] C=x \u{301}",
            "5 [S] D\u{E9}=\u{E9}",
            "6 [S] E=",
        ])
    }
}
