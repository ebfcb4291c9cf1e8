import ArgumentParser

FocusCommand.main()
