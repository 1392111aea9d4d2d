from memrepo.cli.main import main

raise SystemExit(main())
