LauncherCommand.main()
