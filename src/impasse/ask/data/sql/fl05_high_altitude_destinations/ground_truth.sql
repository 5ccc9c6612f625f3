SELECT f.dest, COUNT(*) AS n FROM flights f JOIN airports a ON a.faa = f.dest WHERE a.alt > 3281 AND a.tz <= -7 AND dep_time IS NOT NULL GROUP BY f.dest HAVING COUNT(*) >= 365
