import BGTaskConfig
import BGTaskModel
import Testing

/// A minimal valid entry, with `extra` lines appended to [Desktop Entry].
private func entry(_ extra: String = "", exec: String = "Exec=/usr/bin/app") -> String {
    "[Desktop Entry]\nType=Application\nName=App\n\(exec)\n\(extra)"
}

private func app(_ text: String, id: String = "org.example.A", path: String = "/d/applications/org.example.A.desktop") -> DesktopApp? {
    if case .app(let a) = DesktopEntries.parseApp(text, path: path, id: id, searchPath: "/bin:/usr/bin") { return a }
    return nil
}

private func errors(_ text: String, id: String = "org.example.A") -> [ConfigError] {
    if case .invalid(let e) = DesktopEntries.parseApp(text, path: "/d/a.desktop", id: id, searchPath: "/bin") { return e }
    return []
}

@Suite("Desktop entries (SPEC §13)")
struct DesktopEntryTests {
    @Test("groups, keys, localized keys, comments, whitespace around =, CR LF, BOM")
    func fileSyntax() throws {
        let text = "\u{FEFF}# comment\n\n[Desktop Entry]\r\nName = Maps\nName[de]=Karten\nName[sr@latin]=Mape\n  # indented comment\n[Desktop Action new]\nName=New\n"
        let (file, errors) = DesktopEntryFile.parse(text, path: "f")
        #expect(errors.isEmpty)
        #expect(file.groups.map(\.name) == ["Desktop Entry", "Desktop Action new"])
        let main = try #require(file.group("Desktop Entry"))
        #expect(main.entry("Name")?.raw == "Maps")
        #expect(main.entry("Name", locale: "de")?.raw == "Karten")
        #expect(main.entry("Name", locale: "sr@latin")?.raw == "Mape")
        #expect(main.entry("Name", locale: "de")?.line == 5)
        #expect(file.group("Desktop Action new")?.entry("Name")?.raw == "New")
    }

    @Test("syntax errors name the line and key", arguments: [
        ("[Desktop Entry]\nName=a\nName=b\n", 3, "Name"),
        ("[Desktop Entry]\nNa_me=a\n", 2, "Na_me"),
        ("[Desktop Entry]\nName[=a\n", 2, "Name["),
        ("Name=a\n[Desktop Entry]\n", 1, "Name"),
        ("[Desktop Entry]\njust words\n", 2, nil),
        ("[Desktop Entry]\n[Desktop Entry]\n", 2, nil),
        ("[Desktop Entry\n", 1, nil),
    ] as [(String, Int, String?)])
    func syntaxErrors(text: String, line: Int, key: String?) throws {
        let (_, errors) = DesktopEntryFile.parse(text, path: "/x/f.desktop")
        let first = try #require(errors.first)
        #expect(first.line == line)
        #expect(first.key == key)
        #expect(first.file == "/x/f.desktop")
    }

    @Test("string escapes", arguments: [
        (#"a\sb"#, "a b"), (#"a\nb"#, "a\nb"), (#"a\tb"#, "a\tb"), (#"a\rb"#, "a\rb"), (#"a\\b"#, #"a\b"#),
        ("plain; text", "plain; text"),
    ])
    func escapes(raw: String, value: String) throws {
        #expect(try DesktopEntryValue.string(raw) == value)
    }

    @Test("bad escapes", arguments: [#"a\qb"#, #"a\;b"#, #"end\"#])
    func badEscapes(raw: String) {
        #expect(throws: ConfigError.Kind.self) { try DesktopEntryValue.string(raw) }
    }

    @Test("lists: ; separated, \\; literal, trailing ; optional, empty elements dropped", arguments: [
        ("audio;fetch;", ["audio", "fetch"]), ("audio;fetch", ["audio", "fetch"]), (#"a\;b;c"#, ["a;b", "c"]),
        ("a;;b", ["a", "b"]), ("", []), (#"x\sy;"#, ["x y"]),
    ])
    func lists(raw: String, values: [String]) throws {
        #expect(try DesktopEntryValue.list(raw) == values)
    }

    @Test("booleans", arguments: [("true", true), ("false", false), ("1", true), ("0", false)])
    func booleans(raw: String, value: Bool) throws {
        #expect(try DesktopEntryValue.boolean(raw) == value)
    }

    @Test("bad booleans", arguments: ["yes", "True", ""])
    func badBooleans(raw: String) {
        #expect(throws: ConfigError.Kind.invalidBoolean(raw)) { try DesktopEntryValue.boolean(raw) }
    }

    @Test("Exec= arguments, field codes, quoting", arguments: [
        ("app", ["app"]),
        ("app %f", ["app"]), ("app %F", ["app"]), ("app %u", ["app"]), ("app %U", ["app"]),
        ("app %i %c %k", ["app"]), ("app %d %D %n %N %v %m", ["app"]),
        ("app --file=%f x", ["app", "--file=", "x"]),
        ("app 100%%", ["app", "100%"]), ("app %%f", ["app", "%f"]),
        (#"app "a b" c"#, ["app", "a b", "c"]),
        (#"app "say \"hi\"" "\$HOME" "\`x\`" "back\\slash""#, ["app", #"say "hi""#, "$HOME", "`x`", #"back\slash"#]),
        (#"app """#, ["app", ""]),
        ("/usr/bin/env  FOO=1   app", ["/usr/bin/env", "FOO=1", "app"]),
        (#"app a\ b"#, ["app", "a b"]),
    ])
    func exec(decoded: String, words: [String]) throws {
        #expect(try DesktopEntryValue.execArguments(decoded) == words)
    }

    @Test("bad Exec=", arguments: ["app %x", "app %", #"app "open"#, #"app "\n""#, "%f", "bin/app", ""])
    func badExec(decoded: String) {
        #expect(throws: ConfigError.Kind.self) { try DesktopEntryValue.execArguments(decoded) }
    }

    @Test("Exec= is string-decoded first: \\\\ in the file is one backslash for the quoting rules")
    func execTwoLevels() throws {
        let a = try #require(app(entry(exec: #"Exec=app "a\\"b" %U"#)))
        #expect(a.manifest.exec == ["app", #"a"b"#])
    }

    @Test("the app: ID, Name, Exec, Path, defaults (not lifecycle-aware, not exempt)")
    func appDefaults() throws {
        let a = try #require(app(entry("Name[de]=Ah\nPath=/srv\nNoDisplay=true\nIcon=x\nX-Other=1")))
        #expect(a.manifest.id == "org.example.A")
        #expect(a.manifest.name == "App")
        #expect(a.manifest.exec == ["/usr/bin/app"])
        #expect(a.manifest.workingDirectory == "/srv")
        #expect(a.manifest.lifecycleAware == false)
        #expect(a.manifest.backgroundModes.isEmpty)
        #expect(a.exempt == false)
        #expect(a.manifest.path == "/d/applications/org.example.A.desktop")
    }

    @Test("X-Bgtaskd-* keys")
    func bgtaskdKeys() throws {
        let a = try #require(app(entry("""
            X-Bgtaskd-LifecycleAware=true
            X-Bgtaskd-BackgroundModes=audio;fetch;
            X-Bgtaskd-PermittedTaskIdentifiers=org.example.A.refresh;org.example.A.clean
            X-Bgtaskd-Exempt=true
            """)))
        #expect(a.manifest.lifecycleAware)
        #expect(a.manifest.backgroundModes == [.audio, .fetch])
        #expect(a.manifest.permittedTaskIdentifiers == ["org.example.A.refresh", "org.example.A.clean"])
        #expect(a.exempt)
    }

    @Test("bad values name the line and key", arguments: [
        ("X-Bgtaskd-LifecycleAware=yes", "X-Bgtaskd-LifecycleAware"),
        ("X-Bgtaskd-BackgroundModes=audio;dancing", "X-Bgtaskd-BackgroundModes"),
        ("X-Bgtaskd-PermittedTaskIdentifiers=ok;not/ok", "X-Bgtaskd-PermittedTaskIdentifiers"),
        ("X-Bgtaskd-Exempt=maybe", "X-Bgtaskd-Exempt"),
        ("Path=relative", "Path"),
        ("Hidden=perhaps", "Hidden"),
    ])
    func badValues(line: String, key: String) throws {
        let e = try #require(errors(entry(line)).first)
        #expect(e.key == key)
        #expect(e.line == 5)
        #expect(e.file == "/d/a.desktop")
    }

    @Test("bad Exec= names line 4 and the key")
    func badExecKey() throws {
        let e = try #require(errors(entry(exec: "Exec=app %z")).first)
        #expect(e.key == "Exec")
        #expect(e.line == 4)
    }

    @Test("required keys: Type, Name, Exec (unless D-Bus activated)")
    func requiredKeys() {
        #expect(errors("[Desktop Entry]\nName=A\nExec=a\n").first?.key == "Type")
        #expect(errors("[Desktop Entry]\nType=Application\nExec=a\n").first?.key == "Name")
        #expect(errors("[Desktop Entry]\nType=Application\nName=A\n").first?.key == "Exec")
        let dbus = DesktopEntries.parseApp("[Desktop Entry]\nType=Application\nName=A\nDBusActivatable=true\n", path: "p", id: "a")
        guard case .skipped = dbus else { Issue.record("expected skipped, got \(dbus)"); return }
    }

    @Test("not apps: Hidden, Type=Link, TryExec missing; the first group must be [Desktop Entry]")
    func skipped() {
        for text in [entry("Hidden=true"), "[Desktop Entry]\nType=Link\nName=L\nURL=http://x\n",
                     entry("TryExec=/nonexistent/bgtaskd-app"), entry("TryExec=bgtaskd-no-such-program")] {
            let outcome = DesktopEntries.parseApp(text, path: "p", id: "a", searchPath: "/bin:/usr/bin")
            guard case .skipped = outcome else { Issue.record("expected skipped for \(text): \(outcome)"); continue }
        }
        #expect(app(entry("TryExec=sh")) != nil)
        #expect(app(entry("TryExec=/bin/sh")) != nil)
        #expect(errors("[Other]\nA=b\n[Desktop Entry]\nType=Application\nName=A\nExec=a\n").first?.line == 1)
    }

    @Test("desktop file ID: subdirectories joined with -, .desktop stripped")
    func desktopFileID() {
        #expect(DesktopEntries.desktopFileID(relativePath: "org.gnome.Maps.desktop") == "org.gnome.Maps")
        #expect(DesktopEntries.desktopFileID(relativePath: "kde4/foo/org.kde.Bar.desktop") == "kde4-foo-org.kde.Bar")
    }

    @Test("an ID that is not a valid app ID is an error")
    func invalidID() {
        #expect(errors(entry(), id: "my app+").first?.line == 0)
    }

    @Test("$XDG_DATA_DIRS: split at :, relative entries ignored, default when unset or empty")
    func dataDirs() {
        #expect(DesktopEntries.dataDirectories(environment: "/a:rel:/b/") == ["/a", "/b/"])
        #expect(DesktopEntries.dataDirectories(environment: nil) == DesktopEntries.defaultDataDirectories)
        #expect(DesktopEntries.dataDirectories(environment: "") == DesktopEntries.defaultDataDirectories)
    }

    @Test("loading: first data dir wins (also when hidden), subdirectories, a bad entry leaves only itself out")
    func loadAll() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try dir.write("one/applications/org.example.A.desktop", entry())
        try dir.write("one/applications/org.example.H.desktop", entry("Hidden=true"))
        try dir.write("one/applications/vendor/org.example.S.desktop", entry())
        try dir.write("one/applications/org.example.Bad.desktop", entry("X-Bgtaskd-Exempt=perhaps"))
        try dir.write("two/applications/org.example.A.desktop", "[Desktop Entry]\nType=Application\nName=Second\nExec=b\n")
        try dir.write("two/applications/org.example.H.desktop", entry())
        try dir.write("two/applications/org.example.B.desktop", entry())
        try dir.write("two/applications/readme.txt", "not an entry")
        let loaded = DesktopEntries.loadAll(dataDirectories: [dir.path + "/one", dir.path + "/two", dir.path + "/none"])
        #expect(loaded.apps.map(\.manifest.id).sorted() == ["org.example.A", "org.example.B", "vendor-org.example.S"])
        #expect(loaded.apps.first { $0.manifest.id == "org.example.A" }?.manifest.name == "App")
        #expect(loaded.errors.count == 1)
        #expect(loaded.errors.first?.file == dir.path + "/one/applications/org.example.Bad.desktop")
        #expect(loaded.errors.first?.line == 5)
        #expect(loaded.errors.first?.key == "X-Bgtaskd-Exempt")
        #expect(loaded.skipped.count == 1)
    }

    @Test("[Apps] keys of bgtaskd.conf")
    func appsConfig() throws {
        let result = DaemonConfig.parse([ConfigSource(path: "c", text: """
            [Apps]
            DesktopEntries=no
            DataDirs=/a /b
            Exempt=sm.puri.Phosh
            Exempt=sm.puri.Squeekboard
            Adopt=no
            AdoptFrom=test/user.slice
            """)])
        let config = try #require(result.config)
        #expect(config.apps.desktopEntries == false)
        #expect(config.apps.dataDirs == ["/a", "/b"])
        #expect(config.apps.exempt == ["sm.puri.Phosh", "sm.puri.Squeekboard"])
        #expect(config.apps.adopt == false)
        #expect(config.apps.adoptFrom == "test/user.slice")
        let bad = DaemonConfig.parse([ConfigSource(path: "c", text: "[Apps]\nDataDirs=relative\nExempt=a/b\nAdoptFrom=../x\n")])
        #expect(bad.errors.map(\.key) == ["DataDirs", "Exempt", "AdoptFrom"])
        #expect(DaemonConfig().apps.desktopEntries && DaemonConfig().apps.adopt)
    }

    /// bgtaskd.conf(5): CgroupRoot= and AdoptFrom= take the same three spellings (the file-system path, the
    /// path in the cgroup hierarchy, a path relative to the cgroup2 mount) and refuse the same bad ones.
    @Test func cgroupRootAndAdoptFromTakeTheSameSpellings() throws {
        for value in ["/sys/fs/cgroup/bgtaskd", "/bgtaskd.slice", "bgtaskd.slice/apps"] {
            let result = DaemonConfig.parse([ConfigSource(path: "c", text: "[Daemon]\nCgroupRoot=\(value)\n[Apps]\nAdoptFrom=\(value)\n")])
            let config = try #require(result.config, "\(value): \(result.errors)")
            #expect(config.cgroupRoot == value && config.apps.adoptFrom == value)
        }
        for value in ["../x", "a//b", "/a/./b", "a/"] {
            let result = DaemonConfig.parse([ConfigSource(path: "c", text: "[Daemon]\nCgroupRoot=\(value)\n[Apps]\nAdoptFrom=\(value)\n")])
            #expect(result.errors.map(\.key) == ["CgroupRoot", "AdoptFrom"], "\(value)")
        }
    }
}
