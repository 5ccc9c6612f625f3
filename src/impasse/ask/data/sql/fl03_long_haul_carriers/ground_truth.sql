SELECT carrier, COUNT(*) AS n FROM flights WHERE distance > 2400 AND origin IN ('JFK','EWR') AND dep_time IS NOT NULL GROUP BY carrier HAVING COUNT(*) >= 1000 ORDER BY n DESC
