SELECT Island, COUNT(DISTINCT studyName || '/' || "Individual ID") AS n FROM penguins_raw WHERE 1   GROUP BY Island
