import dagster as dg

# Partition keys are the months themselves ("2026-10"), matching the inbox's <YYYY-MM>/ folders.
monthly_partitions = dg.MonthlyPartitionsDefinition(start_date="2024-01", fmt="%Y-%m")
