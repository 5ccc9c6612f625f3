SELECT Island, substr("Date Egg", 1, 4) AS season, COUNT(*) AS n FROM penguins_raw WHERE "Clutch Completion" = 'Yes' AND Island <> 'Torgersen' GROUP BY 1, 2
