SELECT f.origin, COUNT(*) AS n FROM flights f JOIN weather w ON w.origin = f.origin AND w.year = f.year AND w.month = f.month AND w.day = f.day AND w.hour = f.hour
WHERE w.visib < 1 AND dep_time IS NOT NULL GROUP BY f.origin
