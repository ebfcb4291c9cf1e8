FocusCommand.main()
