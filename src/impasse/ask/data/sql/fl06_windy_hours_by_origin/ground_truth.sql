SELECT origin, COUNT(*) AS n FROM weather WHERE wind_speed > 21.75 AND wind_speed < 200 GROUP BY origin
