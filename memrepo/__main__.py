from memrepo.cli.app import main

raise SystemExit(main())
