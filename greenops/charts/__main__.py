import sys

from greenops.charts import main

sys.exit(main())
