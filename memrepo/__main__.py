from memrepo.cli.fast import main

raise SystemExit(main())
