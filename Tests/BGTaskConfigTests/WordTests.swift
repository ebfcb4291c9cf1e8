import BGTaskConfig
import Testing

@Suite("Command-line words")
struct WordTests {
    @Test("splitting like ExecStart=", arguments: [
        ("/bin/true", ["/bin/true"]),
        ("  /bin/echo   a  b ", ["/bin/echo", "a", "b"]),
        (#"/bin/echo "a b" 'c d'"#, ["/bin/echo", "a b", "c d"]),
        (#"/bin/echo "it's" 'say "hi"'"#, ["/bin/echo", "it's", #"say "hi""#]),
        (#"/bin/echo a"b c"d"#, ["/bin/echo", "ab cd"]),
        (#"/bin/echo "" x"#, ["/bin/echo", "", "x"]),
        (#"/bin/echo a\ b"#, ["/bin/echo", "a b"]),
        (#"/bin/echo a\sb"#, ["/bin/echo", "a b"]),
        (#"/bin/echo \"q\" \\ \;"#, ["/bin/echo", "\"q\"", "\\", ";"]),
        (#"/bin/echo "tab\there" 'nl\n'"#, ["/bin/echo", "tab\there", "nl\n"]),
        (#"/bin/echo \x41\102\u00e9\U0001F600"#, ["/bin/echo", "ABé😀"]),
        ("", []),
    ])
    func split(text: String, words: [String]) throws {
        #expect(try ConfigWords.split(text) == words)
    }

    @Test("quoting errors", arguments: [
        (#"/bin/echo "open"#, "unterminated double quote"),
        ("/bin/echo 'open", "unterminated single quote"),
        (#"/bin/echo \q"#, #"invalid escape sequence "\q""#),
        (#"/bin/echo \x4"#, #"invalid escape sequence "\x", expected 2 digits"#),
        (#"/bin/echo \x00"#, #"escape sequence "\x" does not make a valid character"#),
        (#"/bin/echo \"#, "trailing backslash"),
    ])
    func quotingError(text: String, message: String) {
        #expect(throws: ConfigError.Kind.invalidQuoting(message)) {
            try ConfigWords.split(text)
        }
    }
}
