// Kept to one line on purpose: closures written here would be main-actor isolated (see STYLE.md).
BGTaskCtl.main()
