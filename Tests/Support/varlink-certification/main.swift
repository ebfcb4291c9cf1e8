// Kept to one line: closures written here would be main-actor isolated (see STYLE.md).
CertificationServer.main()
