import ArgumentParser

LauncherCommand.main()
