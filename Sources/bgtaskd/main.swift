// Kept tiny on purpose: closures written here would be main-actor isolated (see STYLE.md).
BgtaskdCommand.main()
