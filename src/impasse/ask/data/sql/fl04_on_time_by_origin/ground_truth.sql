SELECT origin, ROUND(AVG(CASE WHEN arr_delay <= 15 THEN 1.0 ELSE 0.0 END), 4) AS on_time
FROM flights WHERE month IN (1,2,3) AND arr_delay IS NOT NULL GROUP BY origin
